#!/usr/bin/env bash
# device.real_nvml_agent: `gpuledger doctor` and `gpuledger agent` with NVIDIA's
# real libnvidia-ml (build/nvidia, scripts/fetch-nvidia-libs.sh), named
# explicitly. Without an NVIDIA kernel driver both say "NVML present, kernel
# driver not loaded", and the agent keeps running and serves /metrics with
# gpuledger_nvml_up 0 and gpuledger_nvml_state{state="driver_not_loaded"} 1.
# On a node with a loaded NVIDIA kernel driver the library must be reported
# present all the same (initialised, or refused with the version mismatch).
# Usage: real_nvml_agent_test.sh GPULEDGER NVIDIA_ENV_FILE   (as root: the agent loads BPF)
set -euo pipefail
gpuledger="$1" env_file="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -r $env_file ]] || fail "no $env_file: run scripts/fetch-nvidia-libs.sh"
# shellcheck disable=SC1090
. "$env_file"
[[ -r $NVIDIA_REAL_LIBNVML ]] || fail "no real libnvidia-ml at $NVIDIA_REAL_LIBNVML"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-real-nvml.XXXXXX")"
agent_pid=
cleanup() {
  if [[ -n $agent_pid ]]; then kill "$agent_pid" 2>/dev/null || true; wait "$agent_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

if [[ -e /proc/driver/nvidia/version ]]; then
  state_re='^(up|init_failed)$'
else
  state_re='^driver_not_loaded$'
fi
present="NVML present, kernel driver not loaded: nvmlInit_v2 of $NVIDIA_REAL_LIBNVML returned Driver Not Loaded (9)"

# ---- doctor
rc=0
"$gpuledger" doctor --nvml-lib "$NVIDIA_REAL_LIBNVML" --pod-resources-socket "" >"$work/doctor.txt" 2>&1 || rc=$?
[[ $rc -le 1 ]] || fail "doctor exited $rc: $(cat "$work/doctor.txt")"
nvml_row="$(grep -E '^nvml ' "$work/doctor.txt")" || fail "doctor printed no nvml row: $(cat "$work/doctor.txt")"
if [[ ! -e /proc/driver/nvidia/version ]]; then
  [[ $nvml_row =~ ^nvml\ +DEGRADED\ +(.*)$ ]] || fail "doctor's nvml row: $nvml_row"
  [[ ${BASH_REMATCH[1]} == "$present; no GPU readings until the NVIDIA kernel module is loaded (the agent retries)" ]] \
    || fail "doctor's nvml reason: ${BASH_REMATCH[1]}"
else
  [[ $nvml_row != *"NVML absent"* ]] || fail "doctor calls the real NVML absent: $nvml_row"
fi

# ---- the agent: runs, serves, says why NVML is off
"$gpuledger" agent --listen 127.0.0.1:0 --store "" --pod-resources-socket "" --no-bpf-pins \
  --cuda-lib "$NVIDIA_REAL_LIBCUDA" --nvml-lib "$NVIDIA_REAL_LIBNVML" >"$work/agent.log" 2>&1 &
agent_pid=$!
port=
for _ in $(seq 1 400); do  # 20 s
  port="$(sed -nE 's|.*serving http://127\.0\.0\.1:([0-9]+)/metrics.*|\1|p' "$work/agent.log" | head -1)"
  [[ -n $port ]] && break
  kill -0 "$agent_pid" 2>/dev/null || fail "the agent exited: $(cat "$work/agent.log")"
  sleep 0.05
done
[[ -n $port ]] || fail "the agent did not serve within 20 s: $(cat "$work/agent.log")"
curl -fsS "http://127.0.0.1:$port/metrics" >"$work/metrics.txt" || fail "no /metrics"
value() { awk -v k="$1" '$1 == k { print $2 }' "$work/metrics.txt"; }
state="$(awk '$1 ~ /^gpuledger_nvml_state\{/ && $2 == 1 { sub(/.*state="/, "", $1); sub(/".*/, "", $1); print $1 }' "$work/metrics.txt")"
[[ $state =~ $state_re ]] || fail "gpuledger_nvml_state is '$state', want $state_re: $(grep nvml "$work/metrics.txt")"
[[ "$(grep -c '^gpuledger_nvml_state{' "$work/metrics.txt")" == 6 ]] || fail "gpuledger_nvml_state must list its 6 states"
[[ "$(value gpuledger_nvml_simulator)" == 0 ]] || fail "gpuledger_nvml_simulator: $(value gpuledger_nvml_simulator)"
if [[ $state == driver_not_loaded ]]; then
  [[ "$(value gpuledger_nvml_up)" == 0 ]] || fail "gpuledger_nvml_up: $(value gpuledger_nvml_up)"
  grep -qF "NVML plane off: $present" "$work/agent.log" || fail "the agent's log does not say it: $(cat "$work/agent.log")"
fi
kill -0 "$agent_pid" 2>/dev/null || fail "the agent stopped: $(cat "$work/agent.log")"
echo "PASS: real NVML ($NVIDIA_REAL_LIBNVML): doctor and agent say '$state'; the agent serves /metrics"
