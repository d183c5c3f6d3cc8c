#!/usr/bin/env bash
# kit.address_check: the GPU validation kit's address check, without a GPU.
#   1. against the driver simulator (sim/libcuda), with the plan the agent
#      prints for it: every family asked at 4 versions x 3 flags, and the
#      pointers for known entries start the probed symbols the driver's
#      cuGetProcAddress resolution rules name;
#   2. against a stand-in whose cuGetProcAddress returns a hidden function, the
#      middle of an export and an unprobed export: each one is told apart and
#      the tool exits 1.
# Usage: address_check_test.sh GPULEDGER ADDRESS_CHECK SIM_LIBCUDA HIDDEN_DRIVER
set -euo pipefail
gpuledger="$1" check="$2" sim_lib="$3" hidden_lib="$4"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-addrcheck-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
# expect FILE JQ_FILTER EXPECTED: the filter's compact output must equal EXPECTED.
expect() {
  local got
  got="$(jq -c "$2" "$1")"
  [[ "$got" == "$3" ]] || fail "$2: got $got, want $3"
}
# verdict FILE ENTRY VERSION FLAGS: one query's "verdict probed_as".
verdict() {
  jq -r --arg e "$2" --argjson v "$3" --arg f "$4" \
    '.queries[] | select(.entry == $e and .cuda_version == $v and .flags == $f) | "\(.verdict) \(.probed_as)"' "$1"
}

# ---- 1. the simulator, with the agent's own plan
"$gpuledger" probe-plan --cuda-lib "$sim_lib" >"$work/sim.plan"
grep -qx 'cuMemAlloc cuMemAlloc cuMemAlloc_v2' "$work/sim.plan" || fail "plan lacks the cuMemAlloc family: $(cat "$work/sim.plan")"
grep -qx 'cuMemcpyBatchAsync' "$work/sim.plan" || fail "plan must list families the library lacks"
families="$(grep -vc '^#' "$work/sim.plan")"
rc=0
"$check" --plan "$work/sim.plan" --library "$sim_lib" >"$work/sim.json" || rc=$?
[[ $rc -le 1 ]] || fail "address check failed on the simulator (rc $rc): $(cat "$work/sim.json")"
expect "$work/sim.json" '.summary.queries' "$((families * 12))"
expect "$work/sim.json" '.api' '"cuGetProcAddress_v2"'
expect "$work/sim.json" '.cu_init' '0'
expect "$work/sim.json" '[.queries[].cuda_version] | unique' '[11040,12000,12080,13000]'
expect "$work/sim.json" '[.queries[].flags] | unique' '["default","legacy_stream","per_thread_default_stream"]'
# Exit status and summary agree.
missed="$(jq '.summary.missed' "$work/sim.json")"
[[ ($missed -eq 0 && $rc -eq 0) || ($missed -gt 0 && $rc -eq 1) ]] || fail "rc $rc with $missed missed"
[[ "$(verdict "$work/sim.json" cuMemAlloc 12000 default)" == "probed cuMemAlloc_v2" ]] || fail "cuMemAlloc@12000"
[[ "$(verdict "$work/sim.json" cuLaunchKernel 12080 per_thread_default_stream)" == "probed cuLaunchKernel_ptsz" ]] \
  || fail "cuLaunchKernel@12080 per-thread: $(verdict "$work/sim.json" cuLaunchKernel 12080 per_thread_default_stream)"
[[ "$(verdict "$work/sim.json" cuMemcpyHtoD 13000 per_thread_default_stream)" == "probed cuMemcpyHtoD_v2_ptds" ]] \
  || fail "cuMemcpyHtoD per-thread"
[[ "$(verdict "$work/sim.json" cuMemcpyBatchAsync 12000 default)" == "not_found null" ]] \
  || fail "cuMemcpyBatchAsync (CUDA 12.8+) should be missing from the simulator"

# ---- 2. a driver that hands out pointers the agent cannot see
printf '# hand-written plan\ncuMemAlloc cuMemAlloc_v2\ncuLaunchKernel cuLaunchKernel\ncuMemFree cuMemFree_v2\ncuCtxSynchronize cuCtxSynchronize\ncuGraphLaunch\n' \
  >"$work/hidden.plan"
rc=0
"$check" --plan "$work/hidden.plan" --library "$hidden_lib" --versions 12000 >"$work/hidden.json" || rc=$?
[[ $rc -eq 1 ]] || fail "hidden entry points must fail the check (rc $rc)"
[[ "$(verdict "$work/hidden.json" cuMemAlloc 12000 default)" == "probed cuMemAlloc_v2" ]] || fail "hidden: cuMemAlloc"
[[ "$(verdict "$work/hidden.json" cuLaunchKernel 12000 legacy_stream)" == "hidden null" ]] \
  || fail "hidden: cuLaunchKernel is $(verdict "$work/hidden.json" cuLaunchKernel 12000 legacy_stream)"
[[ "$(verdict "$work/hidden.json" cuMemFree 12000 default)" == "inside_symbol null" ]] || fail "hidden: cuMemFree"
expect "$work/hidden.json" '[.queries[] | select(.entry == "cuMemFree")][0] | [.symbol, .offset]' '["cuMemFree_v2",1]'
[[ "$(verdict "$work/hidden.json" cuCtxSynchronize 12000 default)" == "exported_unprobed null" ]] \
  || fail "hidden: cuCtxSynchronize"
[[ "$(verdict "$work/hidden.json" cuGraphLaunch 12000 default)" == "not_found null" ]] || fail "hidden: cuGraphLaunch"
expect "$work/hidden.json" '.summary' '{"queries":15,"found":12,"probed":3,"missed":9}'
expect "$work/hidden.json" '.driver_version' '12080'

# ---- 3. usage errors are errors
rc=0
"$check" --library "$sim_lib" >/dev/null 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "no --plan must exit 2 (rc $rc)"
rc=0
"$check" --plan "$work/sim.plan" --library "$work/none.so" >"$work/none.json" || rc=$?
[[ $rc -eq 2 ]] || fail "a missing library must exit 2 (rc $rc)"
jq -e '.error' "$work/none.json" >/dev/null || fail "a missing library must be reported as an error"
echo "PASS: address check ($families families x 4 versions x 3 flags on the simulator; hidden pointers caught)"
