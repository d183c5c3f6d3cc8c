#!/usr/bin/env python3
"""`gpuledger --help` reads as a list: one line per subcommand (issue 34).

Usage: help_lists_test.py GPULEDGER

Every line of the Subcommands section is a name and its one-line summary, no
wider than a terminal (100 columns): no summary runs on into a paragraph (as
`uninstall`'s eleven lines once did). The detail lives in `gpuledger CMD
--help`, which must open with that same summary. The checker is first shown a
wrapped entry and must reject it, so a checker that passes everything cannot
pass this test.
"""
import re
import subprocess
import sys

WIDTH = 100
# The subcommands the README and docs name; more may come, none may go.
REQUIRED = {"agent", "uninstall", "doctor", "demo", "report", "rightsize", "fleet-db"}
ENTRY = re.compile(r"^  ([a-z][a-z0-9-]*) {2,}(\S.*)$")


def subcommands(help_text):
    """{name: summary} of the Subcommands section; raises ValueError on any line that is not one entry."""
    lines = help_text.splitlines()
    if "Subcommands:" not in lines:
        raise ValueError("no Subcommands: section")
    entries = {}
    for line in lines[lines.index("Subcommands:") + 1:]:
        if not line.strip():
            break
        m = ENTRY.match(line)
        if not m:
            raise ValueError(f"not one line per subcommand: {line!r}")
        if len(line) > WIDTH:
            raise ValueError(f"wider than {WIDTH} columns ({len(line)}): {line!r}")
        entries[m.group(1)] = m.group(2)
    return entries


def rejects(text):
    try:
        subcommands(text)
    except ValueError:
        return True
    return False


def check(ok, message):
    if not ok:
        sys.exit("help_lists_test: " + message)


def main():
    binary = sys.argv[1]
    wrapped = "Subcommands:\n  uninstall   Remove the data plane\n              a stopped agent left\n"
    check(rejects(wrapped), "the checker accepted a wrapped summary")
    check(rejects("Subcommands:\n  report  " + "x" * WIDTH + "\n"), "the checker accepted a line too wide")
    check(not rejects("Subcommands:\n  demo   Run the demo\n\nmore\n"), "the checker rejected a good entry")

    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    check(out.returncode == 0, f"--help exited {out.returncode}: {out.stderr}")
    entries = subcommands(out.stdout)
    missing = REQUIRED - entries.keys()
    check(not missing, f"subcommands missing from --help: {sorted(missing)}")
    for name, summary in entries.items():
        sub = subprocess.run([binary, name, "--help"], capture_output=True, text=True, timeout=30)
        check(sub.returncode == 0, f"{name} --help exited {sub.returncode}: {sub.stderr}")
        first = sub.stdout.splitlines()[0] if sub.stdout else ""
        check(first == summary, f"{name} --help opens with {first!r}, not its summary {summary!r}")
    print(f"{len(entries)} subcommands, one line each: {', '.join(entries)}")


if __name__ == "__main__":
    main()
