#!/usr/bin/env bash
# The README's test command: set up, build, run every test. The BPF tests run
# as root against the real kernel; with CI=true they fail (never skip) when BPF
# is unavailable.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure --timeout 600 "$@"
