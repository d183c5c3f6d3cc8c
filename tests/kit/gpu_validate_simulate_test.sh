#!/usr/bin/env bash
# kit.gpu_validate_simulate: the validation kit's whole orchestration, without a
# GPU: scripts/gpu-validate.sh --simulate with a fresh bundle runs the agent
# (real BPF) against the bundle's driver and NVML simulators and must write
# results.json and results.md in which the address check, the C++ program's
# counts (a simulated stand-in with the same shape of work) and the device
# plane pass, and the PyTorch steps are recorded as skipped. Then once more
# with --no-cgroups (workloads share the kit's cgroup, as where cgroupfs is
# read-only): the C++ program's counts still come out exact, as differences.
# Usage: gpu_validate_simulate_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1" build="$(realpath "$2")"
fail() { echo "FAIL: $*" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-kit-sim.XXXXXX")"
trap 'rm -rf "$work"' EXIT

bundle="$("$src/scripts/bundle.sh" --no-build --build-dir "$build" --out "$work/dist")"
rc=0
"$src/scripts/gpu-validate.sh" --simulate --bundle "$bundle" --out "$work/out" --budget-s 120 || rc=$?
results="$work/out/results.json"
[[ -s "$results" && -s "$work/out/results.md" ]] || fail "no results (rc $rc)"
status() { jq -r --arg s "$1" '.steps[] | select(.step == $s) | .status' "$results"; }
for step in env address static device; do
  [[ "$(status "$step")" == pass ]] || {
    jq --arg s "$step" '.steps[] | select(.step == $s)' "$results"
    fail "step $step: $(status "$step")"
  }
done
for step in eager graph expandable busy; do
  [[ "$(status "$step")" == skipped ]] || fail "step $step should be skipped in --simulate, is $(status "$step")"
done
# The simulated C++ program's counts, exactly.
row() { jq -c --arg m "$1" '.steps[] | select(.step == "static") | .rows[] | select(.metric == $m) | [.truth, .seen, .ok]' "$results"; }
[[ "$(row kernel_launches)" == '[18,18,true]' ]] || fail "kernel_launches $(row kernel_launches)"
[[ "$(row graph_launches)" == '[4,4,true]' ]] || fail "graph_launches $(row graph_launches)"
[[ "$(row memory_allocated_bytes)" == '[117440512,117440512,true]' ]] || fail "allocated $(row memory_allocated_bytes)"
[[ "$(row memcpy_bytes.dtoh)" == '[33558528,33558528,true]' ]] || fail "dtoh $(row memcpy_bytes.dtoh)"
jq -e '.pass_bars_met == true and .mode == "simulate"' "$results" >/dev/null || fail "pass bars not met"
jq -e '[.steps[] | select(.step == "address") | .rows[0].seen] | .[0] > 300' "$results" >/dev/null \
  || fail "address check asked too little"
grep -q '^## static: pass' "$work/out/results.md" || fail "results.md lacks the static step"
# A second pass exists exactly when the agent has --runtime-probes.
if "$bundle/gpuledger" agent --help | grep -q -- --runtime-probes; then
  [[ -n "$(status static@runtime-probes-on)" ]] || fail "no runtime-probes pass"
else
  jq -e '.passes == ["default"]' "$results" >/dev/null || fail "unexpected passes"
fi
[[ $rc -eq 0 ]] || fail "gpu-validate.sh exited $rc"

"$src/scripts/gpu-validate.sh" --simulate --no-cgroups --bundle "$bundle" --out "$work/shared" --budget-s 120 \
  || fail "gpu-validate.sh --no-cgroups exited $?"
results="$work/shared/results.json"
[[ "$(row kernel_launches)" == '[18,18,true]' ]] || fail "--no-cgroups: kernel_launches $(row kernel_launches)"
[[ "$(row memcpy_calls.htod)" == '[2,2,true]' ]] || fail "--no-cgroups: htod calls $(row memcpy_calls.htod)"
jq -e '.pass_bars_met == true' "$results" >/dev/null || fail "--no-cgroups: pass bars not met"
echo "PASS: gpu-validate.sh --simulate ($(jq .duration_s "$results") s)"
