#!/usr/bin/env bash
# systemd-analyze verify on the shipped unit: every directive known, the
# command executable (the unit's /usr/bin/gpuledger pointed at this build's).
# Usage: systemd_unit_test.sh UNIT GPULEDGER_BINARY
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s|/usr/bin/gpuledger|$2|" "$1" >"$dir/gpuledger.service"
out=$(systemd-analyze verify "$dir/gpuledger.service" 2>&1) || { echo "$out"; exit 1; }
[[ -z $out ]] || { echo "FAIL: systemd-analyze verify: $out"; exit 1; }
grep -E '^(ProtectSystem=strict|StateDirectory=gpuledger|CapabilityBoundingSet=CAP_BPF )' "$1" | wc -l | grep -qx 3 ||
  { echo "FAIL: the unit lost its hardening (ProtectSystem, StateDirectory, capabilities)"; exit 1; }
# A stop or restart keeps the pinned data plane (docs/reliability.md): nothing
# in the unit removes it or turns it off; only `gpuledger uninstall` does.
if grep -E '^ExecStop|--no-bpf-pins' "$1" | grep -qE 'uninstall|--no-bpf-pins'; then
  echo "FAIL: the unit removes or turns off the BPF pins: a restart would lose the data plane"; exit 1
fi
grep -qx 'ReadWritePaths=/sys/fs/bpf' "$1" || { echo "FAIL: /sys/fs/bpf not writable: nothing can be pinned"; exit 1; }
echo "ok: $1 verifies"
