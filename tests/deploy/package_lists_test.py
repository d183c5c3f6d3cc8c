#!/usr/bin/env python3
"""The two package lists agree with what the runtime targets link (issue 34).

Usage: package_lists_test.py RUNTIME_LIST TEST_LIST BUILD_DIR BINARY...

scripts/demo.sh installs only scripts/packages-runtime.txt, so every library
the runtime targets (the binary, the workload generator, the CUDA driver and
NVML simulators: what the .deb ships) load must come with that list:
  1. both lists are well formed, and no package is in both;
  2. every library a target loads (ldd, transitive) belongs to a package that
     the runtime list brings: a listed package or one of its dependencies, as
     installed (dpkg's database);
  3. every library a target links directly (DT_NEEDED) has its development
     files (the .so namelink the linker used) in a package the runtime list
     brings, so that the demo's build finds it without the test list.
A failure names the library, the package and which list has it. Each check is
first run on lists with libpq-dev moved to the test list (src/fleet links
libpq, so the runtime target needs it) and with a package in both lists, and
must fail: a checker that passes everything cannot pass this test.

Parts 2 and 3 need dpkg and ldd (Debian); without them they skip (exit 77),
and fail under CI=true.
"""
import os
import re
import shutil
import subprocess
import sys

NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")


def read_list(path):
    """The list's entries, each a tuple of alternatives (`a | b`)."""
    entries = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            alternatives = tuple(p.strip() for p in line.split("|"))
            bad = [p for p in alternatives if not NAME.match(p)]
            if bad:
                raise ValueError(f"{path}:{number}: not a Debian package name: {bad[0]!r}")
            entries.append(alternatives)
    return entries


def in_both(runtime, test):
    names = lambda entries: {p for alts in entries for p in alts}
    return sorted(names(runtime) & names(test))


class Installed:
    """The installed packages' dependency graph, from dpkg's database."""

    def __init__(self):
        out = subprocess.run(
            ["dpkg-query", "-W", "-f", "${db:Status-Abbrev}\t${Package}\t${Provides}\t${Depends}\t${Pre-Depends}\n"],
            capture_output=True, text=True, check=True).stdout
        self.depends = {}
        self.providers = {}
        for line in out.splitlines():
            status, package, provides, depends, pre = (line.split("\t") + [""] * 5)[:5]
            if not status.startswith("ii"):
                continue
            self.depends[package] = [self._names(alt) for alt in (depends + "," + pre).split(",") if alt.strip()]
            for virtual in provides.split(","):
                if virtual.strip():
                    self.providers.setdefault(self._name(virtual), set()).add(package)

    @staticmethod
    def _name(text):
        return re.sub(r"\(.*?\)", "", text).strip().split(":")[0]

    def _names(self, alternatives):
        return [self._name(a) for a in alternatives.split("|")]

    def resolve(self, name):
        """The installed packages that satisfy `name` (itself, or what provides it)."""
        found = {name} if name in self.depends else set()
        return found | self.providers.get(name, set())

    def closure(self, entries):
        """Every installed package a list brings: its entries and their dependencies, recursively."""
        seen = set()
        todo = [p for alts in entries for a in alts for p in self.resolve(a)]
        while todo:
            package = todo.pop()
            if package in seen:
                continue
            seen.add(package)
            for alternatives in self.depends.get(package, []):
                for a in alternatives:
                    todo.extend(self.resolve(a))
        return seen


def owners(paths):
    """{path: the package that installed it} for those an installed package owns, in one dpkg query
    (dpkg's database may name a file under /lib or /usr/lib: both are asked)."""
    asked = {}
    for path in paths:
        for p in {path, os.path.realpath(path)}:
            for candidate in (p, p[4:] if p.startswith("/usr/") else "/usr" + p):
                asked.setdefault(candidate, path)
    out = subprocess.run(["dpkg-query", "-S", *sorted(asked)], capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        package, _, path = line.partition(": ")
        if path in asked:
            found.setdefault(asked[path], package.split(",")[0].split(":")[0].strip())
    return found


def loaded_libraries(binary):
    """{soname: resolved path} of everything the dynamic loader maps for `binary`."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libraries = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\S+) => (/\S+) \(", line)
        if m:
            libraries[m.group(1)] = m.group(2)
    return libraries


def needed(binary):
    out = subprocess.run(["objdump", "-p", binary], capture_output=True, text=True, check=True).stdout
    return re.findall(r"^\s*NEEDED\s+(\S+)$", out, re.M)


def namelink(path, soname):
    """The development symlink (libfoo.so) beside a library, if installed."""
    base = soname.split(".so")[0] + ".so"
    for directory in {os.path.dirname(path), os.path.dirname(os.path.realpath(path))}:
        candidate = os.path.join(directory, base)
        if os.path.exists(candidate):
            return candidate
    return None


def problems(binaries, build_dir, runtime, test, installed):
    """What the runtime targets use that the runtime list does not bring: one sentence each."""
    brought = installed.closure(runtime)
    test_only = installed.closure(test) - brought
    where = lambda package: "only the test list brings it" if package in test_only else "neither list brings it"
    build_dir = os.path.realpath(build_dir)
    ours = lambda path: os.path.realpath(path).startswith(build_dir + "/")  # the simulators
    targets = []
    for binary in binaries:
        libraries = {soname: path for soname, path in loaded_libraries(binary).items() if not ours(path)}
        links = {soname: namelink(libraries[soname], soname) for soname in needed(binary) if soname in libraries}
        targets.append((os.path.basename(binary), libraries, links))
    owner = owners([p for _, libraries, links in targets for p in [*libraries.values(), *links.values()] if p])
    found = []
    for name, libraries, links in targets:
        for soname, path in sorted(libraries.items()):
            package = owner.get(path)
            if package is None:
                found.append(f"{name} loads {path}, which no installed package owns")
            elif package not in brought:
                found.append(f"{name} loads {path} from {package}: {where(package)}")
        for soname, link in sorted(links.items()):
            package = owner.get(link) if link else None
            if package and package not in brought:
                found.append(f"{name} links {soname}, whose {link} is in {package}: {where(package)}")
    return found


def check(ok, message):
    if not ok:
        sys.exit("package_lists_test: " + message)


def main():
    runtime_path, test_path, build_dir, *binaries = sys.argv[1:]
    runtime, test = read_list(runtime_path), read_list(test_path)
    check("cmake" in in_both(runtime, test + [("cmake",)]), "a package in both lists went unnoticed")
    both = in_both(runtime, test)
    check(not both, f"in both lists: {', '.join(both)}")
    print(f"{len(runtime)} runtime and {len(test)} test entries, none in both")

    tools = [t for t in ("dpkg-query", "ldd", "objdump") if not shutil.which(t)]
    if tools:
        print(f"missing {', '.join(tools)} (not Debian?): the link checks need them", file=sys.stderr)
        sys.exit(1 if os.environ.get("CI") == "true" else 77)
    installed = Installed()
    moved = [alts for alts in runtime if alts != ("libpq-dev",)]
    check(len(moved) == len(runtime) - 1, "libpq-dev is not in the runtime list (src/fleet links libpq)")
    caught = problems(binaries, build_dir, moved, test + [("libpq-dev",)], installed)
    check(any("libpq.so.5" in p and "only the test list brings it" in p for p in caught),
          "libpq-dev moved to the test list went unnoticed: " + "; ".join(caught))

    found = problems(binaries, build_dir, runtime, test, installed)
    check(not found, "the runtime targets use what the runtime list does not bring:\n  " + "\n  ".join(found))
    print(f"{len(binaries)} runtime targets: every library they load and link comes with the runtime list")


if __name__ == "__main__":
    main()
