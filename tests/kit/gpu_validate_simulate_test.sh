#!/usr/bin/env bash
# kit.gpu_validate_simulate: the validation kit's whole orchestration, without a
# GPU: scripts/gpu-validate.sh --simulate with a fresh bundle runs the agent
# (real BPF) against the bundle's driver and NVML simulators and must write
# results.json and results.md in which the address check, the C++ program's
# counts (a simulated stand-in with the same shape of work) and the device
# plane pass, and the PyTorch and busy-share steps, driven by a stand-in for
# torch_work.py that works through the simulator (fake_torch_work.py), pass
# with exact counts. Then once more with --no-cgroups (workloads share the
# kit's cgroup, as where cgroupfs is read-only) and no stand-in: the C++
# program's counts still come out exact, as differences, and the PyTorch
# steps are recorded as skipped.
# Usage: gpu_validate_simulate_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1" build="$(realpath "$2")"
fail() { echo "FAIL: $*" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-kit-sim.XXXXXX")"
trap 'rm -rf "$work"' EXIT

bundle="$("$src/scripts/bundle.sh" --no-build --build-dir "$build" --out "$work/dist")"
rc=0
GPULEDGER_KIT_TORCH_WORK="$src/tests/kit/fake_torch_work.py" \
  "$src/scripts/gpu-validate.sh" --simulate --bundle "$bundle" --out "$work/out" --budget-s 120 || rc=$?
results="$work/out/results.json"
[[ -s "$results" && -s "$work/out/results.md" ]] || fail "no results (rc $rc)"
status() { jq -r --arg s "$1" '.steps[] | select(.step == $s) | .status' "$results"; }
for step in env address catalogue static eager graph expandable busy device tables; do
  [[ "$(status "$step")" == pass ]] || {
    jq --arg s "$step" '.steps[] | select(.step == $s)' "$results"
    fail "step $step: $(status "$step")"
  }
done
# The simulated C++ program's counts, exactly.
row() {  # row METRIC [STEP]: [truth, seen, ok]
  jq -c --arg m "$1" --arg s "${2:-static}" \
    '.steps[] | select(.step == $s) | .rows[] | select(.metric == $m) | [.truth, .seen, .ok]' "$results"
}
[[ "$(row kernel_launches)" == '[18,18,true]' ]] || fail "kernel_launches $(row kernel_launches)"
[[ "$(row graph_launches)" == '[4,4,true]' ]] || fail "graph_launches $(row graph_launches)"
[[ "$(row memory_allocated_bytes)" == '[117440512,117440512,true]' ]] || fail "allocated $(row memory_allocated_bytes)"
[[ "$(row memcpy_bytes.dtoh)" == '[33558528,33558528,true]' ]] || fail "dtoh $(row memcpy_bytes.dtoh)"
[[ "$(row kernel_launches eager)" == '[50,50,true]' ]] || fail "eager: $(row kernel_launches eager)"
[[ "$(row graph_launches graph)" == '[100,100,true]' ]] || fail "graph: $(row graph_launches graph)"
[[ "$(row memory_live_bytes expandable)" == '[1342177280,1342177280,null]' ]] \
  || fail "expandable: $(row memory_live_bytes expandable)"
# The busy shares: the stand-in keeps the heavy load busy 80 % of the measured time.
share="$(jq '.steps[] | select(.step == "busy") | .rows[] | select(.metric | test("agent busy")) | .seen[0]' "$results")"
awk -v s="$share" 'BEGIN {exit !(s > 0.7 && s < 0.9)}' || fail "busy: the agent gives the heavy load $share"
jq -e '.pass_bars_met == true and .mode == "simulate"' "$results" >/dev/null || fail "pass bars not met"
jq -e '[.steps[] | select(.step == "address") | .rows[0].seen] | .[0] > 300' "$results" >/dev/null \
  || fail "address check asked too little"
grep -q '^## static: pass' "$work/out/results.md" || fail "results.md lacks the static step"
# A second pass exists exactly when the agent has --runtime-probes.
# (The help is read whole first: grep -q stops early, and with pipefail a
# writer cut off by SIGPIPE would read as "no such flag".)
agent_help="$("$bundle/gpuledger" agent --help)"
if grep -q -- --runtime-probes <<<"$agent_help"; then
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
for step in eager graph expandable busy; do
  [[ "$(status "$step")" == skipped ]] || fail "--no-cgroups: $step should be skipped without PyTorch"
done
echo "PASS: gpu-validate.sh --simulate ($(jq .duration_s "$results") s)"
