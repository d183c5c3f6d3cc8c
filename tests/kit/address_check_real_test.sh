#!/usr/bin/env bash
# kit.address_check_real: the GPU validation kit's address check against
# NVIDIA's real driver library (535, build/nvidia), without a GPU:
#   1. every entry point the library exports, asked by base name at CUDA 11.0 to
#      13.0 and flags 0, 1, 2: each pointer the driver hands out starts an
#      exported symbol, and each one for a billable family (the agent's plan)
#      a symbol the agent probes;
#   2. the plan's families alone (the kit's default mode), at the same versions:
#      every pointer starts a probed symbol.
# Usage: address_check_real_test.sh GPULEDGER ADDRESS_CHECK NVIDIA_ENV_FILE
set -euo pipefail
gpuledger="$1" check="$2" env_file="$3"
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -r $env_file ]] || fail "no $env_file: run scripts/fetch-nvidia-libs.sh"
# shellcheck disable=SC1090
. "$env_file"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-addrcheck-real.XXXXXX")"
trap 'rm -rf "$work"' EXIT
versions=11000,11020,11040,11060,11080,12000,12020,12040,12060,12080,13000

"$gpuledger" probe-plan --cuda-lib "$NVIDIA_REAL_LIBCUDA" >"$work/plan"
families="$(grep -vc '^#' "$work/plan")"

# ---- 1. every export
rc=0
"$check" --plan "$work/plan" --library "$NVIDIA_REAL_LIBCUDA" --versions "$versions" --all-exports >"$work/all.json" \
  || rc=$?
[[ $rc -le 1 ]] || fail "the address check could not run (rc $rc): $(head -c 2000 "$work/all.json")"
summary="$(jq -c .summary "$work/all.json")"
[[ "$(jq -r .mode "$work/all.json")" == all_exports ]] || fail "not the all-exports mode"
[[ "$(jq .driver_version "$work/all.json")" == 12020 ]] || fail "driver version $(jq .driver_version "$work/all.json")"
[[ "$(jq -c '[.queries[].cuda_version] | unique' "$work/all.json")" == "[${versions}]" ]] || fail "versions asked"
[[ "$(jq -c '[.queries[].flags] | unique' "$work/all.json")" == '["default","legacy_stream","per_thread_default_stream"]' ]] \
  || fail "flags asked"
names="$(jq .base_names "$work/all.json")"
[[ "$(jq .summary.queries "$work/all.json")" == "$((names * 11 * 3))" ]] || fail "not every name x version x flag: $summary"
[[ $names -ge 400 ]] || fail "only $names base names read from the library's exports"
# Names are asked by base name: none keeps a version or stream suffix.
[[ "$(jq '[.queries[].entry | select(test("(_v[0-9]+|_ptds|_ptsz)$"))] | length' "$work/all.json")" == 0 ]] \
  || fail "names asked with a suffix"
not_exported="$(jq -c '[.queries[] | select(.verdict != "not_found" and .verdict != "probed" and .verdict != "exported_unprobed")
                        | "\(.entry)@\(.cuda_version)/\(.flags) -> \(.verdict) \(.symbol)+\(.offset)"]' "$work/all.json")"
[[ $not_exported == "[]" ]] || fail "pointers that do not start an exported symbol: $not_exported"
missed="$(jq -c '[.queries[] | select(.billable and .verdict != "not_found" and .probed_as == null)
                  | "\(.entry)@\(.cuda_version)/\(.flags) -> \(.symbol)"]' "$work/all.json")"
[[ $missed == "[]" ]] || fail "billable entry points the agent does not probe: $missed"
[[ $rc -eq 0 ]] || fail "the address check failed (rc $rc): $summary"
echo "all exports: $(jq -r '"\(.exported_symbols) exported cu* functions, \(.base_names) base names"' "$work/all.json"); $summary"

# ---- 2. the plan's families (the kit's mode)
rc=0
"$check" --plan "$work/plan" --library "$NVIDIA_REAL_LIBCUDA" --versions "$versions" >"$work/plan.json" || rc=$?
summary="$(jq -c .summary "$work/plan.json")"
[[ "$(jq .summary.queries "$work/plan.json")" == "$((families * 11 * 3))" ]] || fail "plan mode: $summary"
[[ $rc -eq 0 ]] || fail "plan mode: pointers that do not start a probed symbol (rc $rc): $(jq -c '[.queries[] | select(.verdict != "not_found" and .probed_as == null) | "\(.entry)@\(.cuda_version)/\(.flags) -> \(.verdict) \(.symbol)"]' "$work/plan.json")"
echo "plan ($families families): $summary"
echo "PASS: address check on the real driver $(basename "$NVIDIA_REAL_LIBCUDA")"
