#!/usr/bin/env bash
# probes.real_runtime_entry_points: which driver entry points NVIDIA's real CUDA
# runtime obtains from NVIDIA's real driver library, and whether each pointer
# is the start of an exported symbol the agent probes. No GPU needed: the
# runtime fetches its entry points through cuGetProcAddress before cuInit fails.
#
# A runtime application (gpuledger-runtime-caller) runs on the real libcudart
# 11.8 (build/nvidia) with the real libcuda.so.1 on LD_LIBRARY_PATH, under the
# proc-address recorder (LD_PRELOAD), which logs every request (symbol, CUDA
# version and flags as the runtime asks, the pointer, where it lands). Checked:
#   - every pointer found (a request may succeed with none: CUDA 12+ runtimes
#     ask for names the driver lacks) lies in the fetched libcuda (not a host driver) and starts an
#     exported symbol (dlsym of that name gives that address);
#   - every request for an entry point of a billable family (the agent's plan:
#     `gpuledger probe-plan --cuda-lib LIB`), or landing on a form of one, lands
#     on a symbol the agent probes (that name or an alias at its address);
#   - the runtime 11.8.89 asks exactly what it was measured to ask.
# Where /usr/local/cuda has the CUDA 13 runtime (a CUDA toolkit; not on a fresh
# Debian box), the same for it: it fails with cudaErrorInsufficientDriver on
# driver 535, and what it asked for until then is checked the same way.
# And where the toolkit has CUDA 13's static runtime, a program linked with it
# (STATIC_CALLER, as nvcc links by default): linked on glibc 2.34 or later it
# imports dlsym@GLIBC_2.34, and the recorder must see its lookups too (on the
# first GPU run it saw none of them: docs/gpu-validation.md).
# Usage: real_runtime_entry_points_test.sh GPULEDGER RECORDER CALLER NVIDIA_ENV_FILE [CUDA13_RUNTIME [STATIC_CALLER]]
set -euo pipefail
gpuledger="$1" recorder="$2" caller="$3" env_file="$4"
cuda13="${5:-/usr/local/cuda/lib64/libcudart.so.13}"
static_caller="${6:-}"
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -r $env_file ]] || fail "no $env_file: run scripts/fetch-nvidia-libs.sh"
# shellcheck disable=SC1090
. "$env_file"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-real-runtime.XXXXXX")"
trap 'rm -rf "$work"' EXIT
libcuda="$(realpath "$NVIDIA_REAL_LIBCUDA")"

# The agent's plan for the real driver, and the driver's exports by address
# (aliases share one), as JSON.
"$gpuledger" probe-plan --cuda-lib "$libcuda" >"$work/plan.txt"
jq -R -s '[split("\n")[] | select(length > 0 and (startswith("#") | not)) | split(" ")]
          | {families: map(.[0]), probed: (map(.[1:]) | add)}' "$work/plan.txt" >"$work/plan.json"
nm -D --defined-only "$libcuda" | awk '{ sub(/@.*/, "", $3); print $1, $3 }' \
  | jq -R -s '[split("\n")[] | select(length > 0) | split(" ") | {(.[1]): .[0]}] | add' >"$work/exports.json"

# check NAME RUNTIME EXPECTED_ERROR [CALLER]: runs the runtime under the recorder and checks its log.
check() {
  local name="$1" runtime="$2" expected_error="$3" log="$work/$1.log" run="${4:-$caller}"
  # A private MPS pipe directory: a host's MPS daemon (or a test's simulated one)
  # must not answer this process. A hang fails here, naming the runtime.
  mkdir -p "$work/mps"
  GPULEDGER_PROC_ADDRESS_LOG="$log" LD_PRELOAD="$recorder" LD_LIBRARY_PATH="$NVIDIA_REAL_LIBDIR" \
    CUDA_MPS_PIPE_DIRECTORY="$work/mps" CUDA_MPS_LOG_DIRECTORY="$work/mps" CUDA_CACHE_PATH="$work/cache" \
    timeout 60 "$run" "$runtime" >"$work/$name.out" \
    || fail "$name: the runtime application failed or hung (rc $?): $(cat "$work/$name.out")"
  [[ -s $log ]] || fail "$name: the recorder logged nothing (the runtime did not load libcuda through dlsym?)"
  local got_error
  got_error="$(jq -r .cudaGetDeviceCount_error "$work/$name.out")"
  [[ -z $expected_error || $got_error == "$expected_error" ]] \
    || fail "$name: cudaGetDeviceCount gave $got_error, want $expected_error"
  # Every pointer in the fetched driver: never a host's libcuda.
  while read -r object; do
    [[ "$(realpath "$object")" == "$libcuda" ]] || fail "$name: a pointer lies in $object, not in $libcuda"
  done < <(jq -r 'select(.landing != null) | .landing.object' "$log" | sort -u)
  jq -s --slurpfile plan "$work/plan.json" --slurpfile exports "$work/exports.json" '
    $plan[0] as $p | $exports[0] as $addr
    | ($p.probed | map($addr[.]) | map(select(. != null))) as $probed_at
    | def base: sub("(_v[0-9]+)?(_ptds|_ptsz)?$"; "");
      def billable: .symbol as $s | (.landing.symbol | base) as $b
                    | $p.families | (index([$s]) != null) or (index([$b]) != null);
      [.[] | select(.event | startswith("cuGetProcAddress"))] as $req
    | [$req[] | select(.result == 0 and .landing != null)] as $ok
    | [$ok[] | select(billable)] as $bill
    | {requests: ($req | length),
       apis: ($req | map(.event) | unique),
       distinct_symbols: ($req | map(.symbol) | unique | length),
       distinct_requests: ($req | map([.symbol, .cuda_version, .flags]) | unique | length),
       not_found: ($req | map(select(.result != 0 or .landing == null)) | length),
       cuda_versions: ($req | map(.cuda_version) | unique),
       flags: ($req | map(.flags) | unique),
       distinct_pointers: ($ok | map(.pointer) | unique | length),
       renamed: ($ok | map(select(.landing.symbol != .symbol)) | length),
       not_exported_start: [$ok[] | select(.landing.exported_start != true or .landing.offset != 0)
                            | "\(.symbol)@\(.cuda_version)/\(.flags)"],
       billable_requests: ($bill | length),
       billable_symbols: ($bill | map(.landing.symbol) | unique),
       unprobed_billable: [$bill[] | select(.landing.symbol as $l | ($probed_at | index([$addr[$l]])) == null)
                           | "\(.symbol)@\(.cuda_version)/\(.flags) -> \(.landing.symbol)"] | unique,
       direct_lookups: [.[] | select(.event == "dlsym" or .event == "dlvsym") | .symbol] | unique,
       export_tables: [.[] | select(.event == "cuGetExportTable") | {uuid, result}]}' "$log" >"$work/$name.json"
  local summary="$work/$name.json"
  [[ "$(jq '.requests' "$summary")" -gt 0 ]] || fail "$name: no cuGetProcAddress requests recorded"
  [[ "$(jq -c '.not_exported_start' "$summary")" == "[]" ]] \
    || fail "$name: pointers that do not start an exported symbol: $(jq -c '.not_exported_start' "$summary")"
  [[ "$(jq -c '.unprobed_billable' "$summary")" == "[]" ]] \
    || fail "$name: billable entry points the agent does not probe: $(jq -c '.unprobed_billable' "$summary")"
  jq -r --arg n "$name" '"\($n): \(.requests) requests through \(.apis | join("/")) (\(.distinct_symbols) symbols, \(.distinct_requests) distinct symbol/version/flags), \(.not_found) not found; CUDA versions \(.cuda_versions | first)..\(.cuda_versions | last) (\(.cuda_versions | length)), flags \(.flags | map(tostring) | join(",")); \(.distinct_pointers) distinct pointers, all at the start of an exported symbol, \(.renamed) to another name than asked; \(.billable_requests) billable requests on \(.billable_symbols | length) symbols, all probed; looked up directly: \(.direct_lookups | join(", ")); export tables asked: \(.export_tables | map("\(.uuid)=\(.result)") | join(", ") | if . == "" then "none" else . end)"' "$summary"
}

# ---- the CUDA 11.8 runtime (libcudart11.0 11.8.89)
no_gpu_error=
[[ -e /proc/driver/nvidia/version ]] || no_gpu_error=cudaErrorNoDevice
check cudart-11.8 "$NVIDIA_REAL_LIBCUDART" "$no_gpu_error"
if [[ $(basename "$NVIDIA_REAL_LIBCUDART") == libcudart.so.11.8.89 ]]; then
  # As measured: the whole table before cuInit, through cuGetProcAddress (v1),
  # cuGetProcAddress itself fetched twice, per-thread forms by flag 2.
  got="$(jq -c '[.requests, .distinct_symbols, .distinct_requests, .not_found, .apis, .flags,
                 (.cuda_versions | [first, last, length]), .direct_lookups]' "$work/cudart-11.8.json")"
  want='[384,319,383,0,["cuGetProcAddress"],[0,2],[2000,11070,27],["cuGetProcAddress"]]'
  [[ $got == "$want" ]] || fail "cudart 11.8.89 asked otherwise than measured: $got, want $want"
fi
# Without a kernel driver cuInit fails before the runtime reads any export
# table; after a successful cuInit (a GPU node) it may (docs/runtime-probes.md).
if [[ -n $no_gpu_error ]]; then
  [[ "$(jq -c .export_tables "$work/cudart-11.8.json")" == "[]" ]] \
    || fail "cudart 11.8 asked for export tables without a driver: $(jq -c .export_tables "$work/cudart-11.8.json")"
fi

# ---- the CUDA 13 runtime, where a toolkit provides it
if [[ -r $cuda13 ]]; then
  check cudart-13 "$(realpath "$cuda13")" cudaErrorInsufficientDriver
  # It asks for an export table before it judges the driver too old.
  [[ "$(jq '.export_tables | length' "$work/cudart-13.json")" -ge 1 ]] \
    || fail "cudart 13 asked for no export table: $(jq -c .export_tables "$work/cudart-13.json")"
else
  echo "cudart-13: no $cuda13 (no CUDA 13 toolkit here; optional)"
fi
if [[ -n $static_caller ]]; then
  objdump -T "$static_caller" | grep -q 'GLIBC_2.34) *dlsym$' \
    || fail "the static runtime's caller does not import dlsym@GLIBC_2.34: it tests nothing new"
  check cudart-13-static static cudaErrorInsufficientDriver "$static_caller"
  [[ "$(jq -c .direct_lookups "$work/cudart-13-static.json")" == '["cuGetProcAddress_v2"]' ]] \
    || fail "cudart 13 (static) looked up otherwise: $(jq -c .direct_lookups "$work/cudart-13-static.json")"
else
  echo "cudart-13-static: no libcudart_static.a (no CUDA 13 toolkit here; optional)"
fi
echo "PASS: real runtime entry points"
