#!/usr/bin/env bash
# systemd-analyze verify on the shipped unit: every directive known, the
# command executable (the unit's /usr/bin/gpuledger pointed at this build's).
# Usage: systemd_unit_test.sh UNIT GPULEDGER_BINARY
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The ExecStopPost script is installed beside the binary; here it is the repository's.
sed -e "s|/usr/bin/gpuledger|$2|" -e "s|/usr/lib/gpuledger/stop-post|$(cd "$(dirname "$1")" && pwd)/stop-post|" "$1" \
  >"$dir/gpuledger.service"
out=$(systemd-analyze verify "$dir/gpuledger.service" 2>&1) || { echo "$out"; exit 1; }
[[ -z $out ]] || { echo "FAIL: systemd-analyze verify: $out"; exit 1; }
grep -E '^(ProtectSystem=strict|StateDirectory=gpuledger|CapabilityBoundingSet=CAP_BPF )' "$1" | wc -l | grep -qx 3 ||
  { echo "FAIL: the unit lost its hardening (ProtectSystem, StateDirectory, capabilities)"; exit 1; }
# A restart keeps the pinned data plane (docs/reliability.md): the agent leaves
# it (--keep-pins-on-exit), nothing turns it off, and only the stop-post script
# (a last stop of a disabled unit; maintainer_scripts_test.sh) removes it.
grep -E '^ExecStart=' "$1" | grep -q -- '--keep-pins-on-exit' ||
  { echo "FAIL: ExecStart lacks --keep-pins-on-exit: a restart would lose the data plane"; exit 1; }
if grep -q -- '--no-bpf-pins' "$1" || grep -E '^Exec' "$1" | grep -q 'uninstall'; then
  echo "FAIL: the unit turns off or removes the BPF pins unconditionally: a restart would lose the data plane"; exit 1
fi
grep -qx 'ExecStopPost=-/usr/lib/gpuledger/stop-post' "$1" ||
  { echo "FAIL: no ExecStopPost removes the pins at a last stop"; exit 1; }
grep -qx 'ReadWritePaths=/sys/fs/bpf' "$1" || { echo "FAIL: /sys/fs/bpf not writable: nothing can be pinned"; exit 1; }
echo "ok: $1 verifies"
