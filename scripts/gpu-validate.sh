#!/usr/bin/env bash
# gpu-validate.sh: the GPU validation kit. Checks gpuledger against a real
# NVIDIA GPU in one run, with the portable bundle (scripts/bundle.sh): no CMake
# build of the project and no Debian packages on the GPU machine, which needs
# only its NVIDIA driver, nvcc and Python with PyTorch. See docs/gpu-validation.md.
#
#   scripts/gpu-validate.sh [--out DIR] [--bundle DIR] [--budget-s 330] [--simulate] [--no-cgroups]
#
# Steps (each under `timeout`; a failure is recorded, never fatal):
#   env         driver, CUDA, toolkit, PyTorch versions
#   address     cuGetProcAddress_v2 pointers vs the exported symbols the agent probes
#   catalogue   the driver's exported entry points that change a bill vs the agent's plan
#   static      tests/gpu/known_work.cu built with nvcc's default static runtime vs its truth
#   eager       a PyTorch training loop vs torch.profiler's kernel count
#   graph       its forward pass as a CUDA graph: graph launches
#   expandable  PyTorch with expandable_segments: live bytes vs memory_reserved() and NVML
#   busy        two processes sharing the GPU: busy shares, agent vs NVML per-process samples
#   device      inventory, NVML readings, ioctl counts, GPU labels on the series
#   tables      which cuGetExportTable ids the runtimes asked for after a successful cuInit
#   fetched     the C++ program under the proc-address recorder: what its runtime fetches
# When `gpuledger agent --help` lists --runtime-probes, a second pass repeats
# static, eager and graph with `--runtime-probes on`.
# Writes DIR/results.md and DIR/results.json (plus DIR/steps/ and DIR/raw/).
# --simulate runs the same orchestration against the bundle's CUDA driver and
# NVML simulators (no GPU; the PyTorch steps are skipped): the kit's own test.
# Each workload runs in a cgroup of its own (one workload to the agent); with
# --no-cgroups, or where none can be made, they share this script's cgroup and
# the agent's counters are compared as differences (the busy step needs two).
# Exit: 0 when the pass bars are met, 1 when not, 2 when the kit could not run.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="${OUT:-$ROOT/gpu-validation}"
BUNDLE=""
BUDGET_S=330
SIMULATE=0
SIM_FLAG=()
NO_CGROUPS=0
PY="${PYTHON:-python3}"
# A stand-in for tests/gpu/torch_work.py (the kit's own test, with --simulate).
TORCH_WORK=()
[[ -n "${GPULEDGER_KIT_TORCH_WORK:-}" ]] && TORCH_WORK=(--torch-work "$GPULEDGER_KIT_TORCH_WORK")
KIT="$ROOT/tests/gpu/kit.py"
ARGS=("$@")

while (($#)); do
  case "$1" in
    --out) OUT_DIR="$2"; shift 2 ;;
    --bundle) BUNDLE="$2"; shift 2 ;;
    --budget-s) BUDGET_S="$2"; shift 2 ;;
    --simulate) SIMULATE=1; SIM_FLAG=(--simulate); shift ;;
    --no-cgroups) NO_CGROUPS=1; shift ;;
    -h|--help) sed -n '2,30s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { printf '[gpu-validate %3ds] %s\n' "$((SECONDS))" "$*" >&2; }
die() {  # the reason goes into the results too: a one-shot GPU run must bring it back
  log "ERROR: $*"
  if mkdir -p "$OUT_DIR" 2>/dev/null; then
    printf '# gpuledger GPU validation: could not run\n\n%s\n' "$*" >"$OUT_DIR/results.md"
    printf '{"error": "%s"}\n' "${*//\"/\'}" >"$OUT_DIR/results.json"
  fi
  exit 2
}

if [[ $EUID -ne 0 ]]; then
  command -v sudo >/dev/null && exec sudo -n -E "$0" "${ARGS[@]}"
  die "run as root (the agent loads eBPF programs)"
fi
if [[ -z "$BUNDLE" ]]; then
  BUNDLE="$(find "$ROOT/dist" -maxdepth 1 -type d -name 'gpuledger-*-linux-*' 2>/dev/null | sort | tail -n 1)"
fi
[[ -n "$BUNDLE" && -f "$BUNDLE/gpuledger" ]] || die "no bundle: run scripts/bundle.sh here, carry dist/"
BUNDLE="$(cd "$BUNDLE" && pwd)"
# A copy that lost its modes (an archive, a file transfer) still runs.
chmod +x "$BUNDLE"/gpuledger* "$BUNDLE/glibc/ld-linux-x86-64.so.2" 2>/dev/null
# The Python that has PyTorch (a venv's `python` may have it where python3 does not).
if ((!SIMULATE)) && [[ -z "${PYTHON:-}" ]]; then
  for candidate in python3 python; do
    if "$candidate" -c 'import torch' 2>/dev/null; then PY="$candidate"; break; fi
  done
fi
command -v "$PY" >/dev/null || die "$PY not found"

mkdir -p "$OUT_DIR/raw" "$OUT_DIR/steps"
OUT_DIR="$(cd "$OUT_DIR" && pwd)"
rm -f "$OUT_DIR"/steps/*.json
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-validate.XXXXXX")"
AGENT_PID=""
API=""
DEADLINE=$((SECONDS + BUDGET_S))
STARTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
PASSES=()

stop_agent() {
  if [[ -n "$AGENT_PID" ]] && kill -0 "$AGENT_PID" 2>/dev/null; then
    kill "$AGENT_PID" 2>/dev/null
    wait "$AGENT_PID" 2>/dev/null
  fi
  AGENT_PID=""
}
cleanup() {
  stop_agent
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CG2_ROOT="$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)"
((NO_CGROUPS)) && CG2_ROOT=""
[[ -n "$CG2_ROOT" ]] || log "WARNING: no cgroup2 mount: workloads share this script's cgroup"

# ------------------------------------------------------------ the driver under test
AGENT_ARGS=(--listen 127.0.0.1:0 --store "" --nvml-interval-ms 500 --scan-interval-ms 1000)
# Each pass starts from zero and leaves nothing pinned on the machine (builds that pin by default).
agent_help_text="$("$BUNDLE/gpuledger-run" gpuledger agent --help 2>/dev/null || true)"  # whole: no SIGPIPE with grep -q
if grep -q -- '--no-bpf-pins' <<<"$agent_help_text"; then
  AGENT_ARGS+=(--no-bpf-pins)
fi
# The steps count launches, copies and waits: every hot call probed. (auto,
# the default, would take billing on a GPU whose NVML splits it, and count none.)
if grep -q -- '--probe-set' <<<"$agent_help_text"; then
  AGENT_ARGS+=(--probe-set full)
fi
if ((SIMULATE)); then
  CUDA_LIB="$BUNDLE/sim/lib/libcuda.so.1"
  GPUS=1
  cat >"$WORK/nvml-sim.json" <<'EOF'
{"driver_version": "simulated", "devices": [{"uuid": "GPU-00000000-1111-4222-8333-444444444444",
 "name": "gpuledger simulated GPU", "pci_bus_id": "00000000:01:00.0", "minor": 0, "mig_mode": 0,
 "utilization": {"gpu": 40, "memory": 10}, "memory": {"total": 85899345920, "used": 1073741824},
 "power_mw": 200000}]}
EOF
  export GPULEDGER_NVML_SIM_CONFIG="$WORK/nvml-sim.json"
  AGENT_ARGS+=(--cuda-lib "$CUDA_LIB" --no-discovery --nvml-lib "$BUNDLE/sim/nvml/libnvidia-ml.so.1"
               --nvidia-proc-root "$WORK/no-driver")
else
  CUDA_LIB="$(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" && /x86-64/ && !found {print $NF; found = 1}')"
  for p in "$CUDA_LIB" /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 /usr/local/nvidia/lib64/libcuda.so.1; do
    [[ -n "$p" && -e "$p" ]] && { CUDA_LIB="$(readlink -f "$p")"; break; }
  done
  [[ -e "$CUDA_LIB" ]] || log "WARNING: no libcuda.so.1 found"
  GPUS="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"
  AGENT_ARGS+=(--cuda-lib "$CUDA_LIB")
  # known_work, built while the first steps run: nvcc's default runtime is the static one.
  NVCC="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  (
    timeout 150 "$NVCC" -O2 -arch=native -o "$WORK/known_work" "$ROOT/tests/gpu/known_work.cu" \
      || timeout 150 "$NVCC" -O2 -o "$WORK/known_work" "$ROOT/tests/gpu/known_work.cu"
  ) >"$OUT_DIR/raw/nvcc.log" 2>&1 &
  NVCC_PID=$!
fi
log "bundle $BUNDLE, driver library ${CUDA_LIB:-none}, results in $OUT_DIR"

start_agent() {  # start_agent PASS_NAME EXTRA_ARGS...
  local name="$1" logf
  shift
  logf="$OUT_DIR/raw/agent-$name.log"
  "$BUNDLE/gpuledger-run" gpuledger agent "${AGENT_ARGS[@]}" "$@" >"$logf" 2>&1 &
  AGENT_PID=$!
  API=""
  local port
  for _ in $(seq 1 150); do
    port="$(sed -n 's|.*agent serving http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$logf" | head -n 1)"
    [[ -n "$port" ]] && { API="http://127.0.0.1:$port"; break; }
    kill -0 "$AGENT_PID" 2>/dev/null || break
    sleep 0.2
  done
  if [[ -z "$API" ]]; then
    log "agent ($name) did not start: $(tail -n 5 "$logf" | tr '\n' ' ')"
    return 1
  fi
  # Probes on the driver before any workload starts.
  for _ in $(seq 1 50); do
    "$PY" -c 'import json,sys,urllib.request as u; sys.exit(0 if json.load(u.urlopen(sys.argv[1]))["probes_attached"] > 0 else 1)' \
      "$API/api/v1/workloads" 2>/dev/null && break
    sleep 0.2
  done
  log "agent ($name) at $API"
}

# record_step NAME STATUS NOTE: a step that could not run at all.
record_step() {
  "$PY" -c 'import json,sys; json.dump({"step": sys.argv[1], "title": sys.argv[1], "status": sys.argv[2], "rows": [], "notes": [sys.argv[3]], "data": {}, "duration_s": 0}, open(sys.argv[4], "w"))' \
    "$1" "$2" "$3" "$OUT_DIR/steps/$1.json"
}

run_step() {  # run_step STEP TIMEOUT_S PASS_NAME
  local step="$1" limit="$2" pass="$3" left name rc=0
  name="$step${pass:+@$pass}"
  left=$((DEADLINE - SECONDS))
  if ((left < 15)); then record_step "$name" skipped "the kit's time budget ran out"; return; fi
  ((limit > left)) && limit=$left
  # env, address and catalogue need no agent; the others read it.
  if [[ -z "$API" && "$step" != env && "$step" != address && "$step" != catalogue ]]; then
    record_step "$name" error "no agent (raw/agent-${pass:-default}.log)"
    return
  fi
  log "step $name (at most ${limit}s)"
  timeout -k 5 "$limit" "$PY" "$KIT" step "$step" --api "${API:-http://127.0.0.1:9}" --bundle "$BUNDLE" --work "$WORK" --out "$OUT_DIR" \
    --cuda-lib "$CUDA_LIB" --cgroup-root "$CG2_ROOT" ${pass:+--pass "$pass"} ${GPUS:+--gpus "$GPUS"} \
    "${SIM_FLAG[@]}" "${TORCH_WORK[@]}" 2>>"$OUT_DIR/raw/kit.log" || rc=$?
  if ((rc == 124 || rc == 137)); then
    record_step "$name" error "timed out after ${limit}s"
  elif [[ ! -s "$OUT_DIR/steps/$name.json" ]]; then
    record_step "$name" error "the step exited $rc without a result (see raw/kit.log)"
  fi
  tail -n 1 "$OUT_DIR/raw/kit.log" >&2
}

# ------------------------------------------------------------ pass 1: the agent as shipped
PASSES+=("default")
start_agent default
run_step env 30 ""
run_step address 40 ""
run_step catalogue 20 ""
if ((!SIMULATE)); then
  wait "$NVCC_PID" || log "nvcc failed (raw/nvcc.log)"
fi
run_step static 60 ""
run_step eager 60 ""
run_step graph 45 ""
run_step expandable 45 ""
run_step busy 50 ""
run_step device 20 ""
run_step tables 10 ""
run_step fetched 30 ""
stop_agent

# ------------------------------------------------------------ pass 2: runtime-API probes on
agent_help="$("$BUNDLE/gpuledger-run" gpuledger agent --help 2>/dev/null || true)"  # whole: no SIGPIPE with grep -q
if grep -q -- '--runtime-probes' <<<"$agent_help"; then
  PASSES+=("runtime-probes-on")
  if start_agent runtime-probes-on --runtime-probes on; then
    run_step static 45 runtime-probes-on
    run_step eager 60 runtime-probes-on
    run_step graph 45 runtime-probes-on
  fi
  stop_agent
else
  log "this agent has no --runtime-probes: one pass only"
fi

# ------------------------------------------------------------ results
"$PY" -c 'import json,sys; json.dump({"started": sys.argv[1], "finished": sys.argv[2], "duration_s": int(sys.argv[3]), "passes": sys.argv[4].split(), "bundle": sys.argv[5], "cuda_lib": sys.argv[6]}, open(sys.argv[7], "w"))' \
  "$STARTED" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$SECONDS" "${PASSES[*]}" "$BUNDLE" "$CUDA_LIB" "$WORK/meta.json"
"$PY" "$KIT" report --out "$OUT_DIR" --meta "$WORK/meta.json" "${SIM_FLAG[@]}" >/dev/null
log "results: $OUT_DIR/results.md, $OUT_DIR/results.json (${SECONDS}s)"
"$PY" -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["pass_bars_met"] else 1)' "$OUT_DIR/results.json"
