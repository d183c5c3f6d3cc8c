#!/usr/bin/env python3
"""The structure of src/, measured from the code: what docs/architecture.md promises.

  scripts/structure-check.py                 the report: layers, folder edges, cycles, longest functions
  scripts/structure-check.py --field NAME    also: the files of src/ that name NAME (e.g. split_source)
  scripts/structure-check.py --check         exit 1 on an include that points up the layer order of
                                             src/CMakeLists.txt (or any cycle), or a function longer
                                             than --max-lines (default 150)

An edge A -> B is a file of src/A that includes "B/...". The layer order is the order of the
add_subdirectory() lines in src/CMakeLists.txt: a folder may include only folders listed before it.
Function lengths come from brace matching on the source with comments and strings blanked: a
definition is a '{' at namespace depth whose statement looks like a function head.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)


def sources():
    for folder in sorted(os.listdir(SRC)):
        path = os.path.join(SRC, folder)
        if not os.path.isdir(path):
            continue
        for dirpath, _, files in os.walk(path):
            for name in sorted(files):
                if name.endswith((".h", ".cpp")):
                    yield folder, os.path.join(dirpath, name)


def layer_order():
    text = open(os.path.join(SRC, "CMakeLists.txt")).read()
    return re.findall(r"^\s*add_subdirectory\((\w+)\)", text, re.M)


def folder_edges():
    edges = {}
    for folder, path in sources():
        for target in set(INCLUDE.findall(open(path, errors="replace").read())):
            if target != folder and os.path.isdir(os.path.join(SRC, target)):
                edges.setdefault((folder, target), []).append(os.path.relpath(path, ROOT))
    return edges


def cycles(edges):
    """Strongly connected components of more than one folder (Tarjan)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def blank(text):
    """Comments, strings and character literals replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


HEAD = re.compile(r"\)\s*(const|noexcept|override|final|mutable|->\s*[\w:<>,\s*&]+|\s)*(:[^;{}]*)?$", re.S)
NOT_FUNCTION = re.compile(r"^\s*(namespace|struct|class|union|enum|extern)\b|=\s*$|\b(if|for|while|switch|catch)\s*\(")


def functions(path):
    """(lines, first line, name) of each function defined in the file."""
    text = blank(open(path, errors="replace").read())
    found, depth, scope_depths, statement_start = [], 0, [], 0
    i = 0
    while i < len(text):
        c = text[i]
        if c == "{":
            head = text[statement_start:i]
            if depth == len(scope_depths) and HEAD.search(head) and not NOT_FUNCTION.search(head):
                # a function body: skip to its matching brace
                j, d = i + 1, 1
                while j < len(text) and d:
                    d += {"{": 1, "}": -1}.get(text[j], 0)
                    j += 1
                first = text.count("\n", 0, i) + 1
                last = text.count("\n", 0, j) + 1
                name = re.findall(r"([~\w:]+)\s*\(", head)
                found.append((last - first + 1, first, name[0] if name else "?"))
                i = j
                statement_start = j
                continue
            if depth == len(scope_depths):
                scope_depths.append(depth)  # namespace, class or struct: its members are at depth + 1
            depth += 1
            statement_start = i + 1
        elif c == "}":
            depth -= 1
            if scope_depths and scope_depths[-1] == depth:
                scope_depths.pop()
            statement_start = i + 1
        elif c == ";":
            statement_start = i + 1
        i += 1
    return found


def architecture_paths_missing():
    """The files docs/architecture.md names (`bpf/...`, `src/...`, `scripts/...`) that are not in the tree:
    the map must name only stages that exist."""
    doc = os.path.join(ROOT, "docs", "architecture.md")
    if not os.path.exists(doc):
        return ["docs/architecture.md"]
    named = set(re.findall(r"`((?:src|bpf|scripts|docs|tests|deploy)/[\w./-]+)`", open(doc).read()))
    return sorted(p for p in named if not os.path.exists(os.path.join(ROOT, p)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--field", action="append", default=[], help="count the files of src/ that name this word")
    ap.add_argument("--check", action="store_true", help="fail on an upward include, a cycle or a long function")
    ap.add_argument("--max-lines", type=int, default=150)
    ap.add_argument("--longest", type=int, default=10, help="how many of the longest functions to list")
    args = ap.parse_args()

    order = layer_order()
    rank = {name: i for i, name in enumerate(order)}
    edges = folder_edges()
    upward = sorted((a, b) for a, b in edges if rank.get(b, -1) >= rank.get(a, len(order)))
    found_cycles = cycles(edges)
    longest = sorted(
        ((n, os.path.relpath(p, ROOT), line, name) for _, p in sources() for n, line, name in functions(p)),
        reverse=True,
    )

    print("layers (bottom up): " + " ".join(order))
    print("folder edges (files):")
    for (a, b), files in sorted(edges.items()):
        print(f"  {a} -> {b} ({len(files)})")
    print("folders in an include cycle: " + ("none" if not found_cycles else "; ".join(" ".join(c) for c in found_cycles)))
    print("includes up the layer order: " + ("none" if not upward else ", ".join(f"{a} -> {b}" for a, b in upward)))
    print(f"longest functions (lines):")
    for n, path, line, name in longest[: args.longest]:
        print(f"  {n:4d} {path}:{line} {name}")
    missing_docs = architecture_paths_missing()
    print("paths docs/architecture.md names that do not exist: " + ("none" if not missing_docs else ", ".join(missing_docs)))
    for field in args.field:
        word = re.compile(r"\b" + re.escape(field) + r"\b")
        files = sorted(os.path.relpath(p, ROOT) for _, p in sources() if word.search(open(p, errors="replace").read()))
        print(f"files of src/ naming {field}: {len(files)}")
        for f in files:
            print(f"  {f}")

    if args.check:
        too_long = [x for x in longest if x[0] > args.max_lines]
        for n, path, line, name in too_long:
            print(f"structure-check: {path}:{line} {name} is {n} lines, over {args.max_lines}", file=sys.stderr)
        for a, b in upward:
            print(f"structure-check: src/{a} includes src/{b}, which is not below it ({', '.join(edges[(a, b)][:3])})",
                  file=sys.stderr)
        for path in missing_docs:
            print(f"structure-check: docs/architecture.md names {path}, which does not exist", file=sys.stderr)
        if found_cycles or upward or too_long or missing_docs:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
