#!/usr/bin/env bash
# Handler cost per call of the CUDA probe programs, from the kernel's own BPF
# run-time statistics (kernel.bpf_stats_enabled: run_time_ns / run_cnt per
# program). It times the handlers only, not the uprobe trap around them, so it
# tells map layouts apart where the trap's noise (part 1 of gpuledger-bench)
# would hide them. Used to choose the workload map's type (docs/performance.md,
# "The workload map"): build with a layout, run this, compare.
#
#   sudo scripts/bench-probe-handlers.sh [BUILD_DIR]      (CALLS=200000 by default)
#
# Runs `gpuledger agent --no-discovery` on a private copy of the simulated
# driver, then tenants in a cgroup of their own: cuLaunchKernel (gl_launch,
# entry probe) and cuMemcpyHtoD (gl_call_entry + gl_call_return), first one
# tenant pinned to CPU 0, then one per CPU at once (the same workload on every
# CPU: where a shared counter's cache line moves between CPUs). Stats are on
# only while it runs; everything it made is removed at exit.
set -euo pipefail
build=$(realpath "${1:-build}")
calls=${CALLS:-200000}
cpus=$(nproc)
cg2=$(awk '{for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break }}' /proc/self/mountinfo | head -1)
[[ -n "$cg2" ]] || { echo "no cgroup2 mount" >&2; exit 1; }
work=$(mktemp -d /tmp/gl-handlers.XXXXXX)
cg="$cg2/gl-handlers-$$"
stats_before=$(cat /proc/sys/kernel/bpf_stats_enabled)
agent_pid=
cleanup() {
  if [[ -n "$agent_pid" ]]; then
    kill "$agent_pid" 2>/dev/null || true
    wait "$agent_pid" 2>/dev/null || true
  fi
  echo "$stats_before" > /proc/sys/kernel/bpf_stats_enabled
  rmdir "$cg" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$cg"
cp "$build/sim/lib/libcuda.so.1" "$work/libcuda.so.1"  # a private inode: no other agent's probes on it

# The agent's programs: the newest of each name once it has attached (bpftool
# here cannot say which process holds a program; its ids are the newest).
prog_ids() { bpftool prog show --json | python3 -c '
import json, sys
ids = {}
for p in json.load(sys.stdin):
    if p.get("name") in ("gl_launch", "gl_call_entry", "gl_call_return"): ids[p["name"]] = max(ids.get(p["name"], 0), p["id"])
print(" ".join(f"{k}={v}" for k, v in ids.items()))'; }
"$build/gpuledger" agent --no-discovery --cuda-lib "$work/libcuda.so.1" --listen 127.0.0.1:0 --no-nvml \
  --pod-resources-socket "" --store "" > "$work/agent.log" 2>&1 &
agent_pid=$!
for _ in $(seq 100); do grep -q "attached .* probes" "$work/agent.log" && break; sleep 0.1; done
grep -q "attached .* probes" "$work/agent.log" || { cat "$work/agent.log" >&2; exit 1; }
declare -A prog_id
for kv in $(prog_ids); do prog_id[${kv%%=*}]=${kv#*=}; done

# run_time_ns and run_cnt of the agent's program NAME.
prog_stats() {
  bpftool prog show id "${prog_id[$1]}" --json | python3 -c '
import json, sys
p = json.load(sys.stdin)
print(p.get("run_time_ns", 0), p.get("run_cnt", 0))'
}

# measure SCRIPT PROGRAMS... -- per-call ns of each program over `tenants` tenants at once.
measure() {
  local label=$1 script=$2 tenants=$3; shift 3
  local -A before
  for prog in "$@"; do before[$prog]=$(prog_stats "$prog"); done
  local pids=()
  for ((t = 0; t < tenants; t++)); do
    sh -c 'echo $$ > "$1/cgroup.procs" && exec taskset -c "$2" env LD_LIBRARY_PATH="$3" CUDASIM_KERNEL_US=0 "$4" -q "$5"' \
      sh "$cg" "$t" "$work" "$build/gpuledger-cudasim" "$script" &
    pids+=($!)
  done
  wait "${pids[@]}"
  local line="| $label | $tenants"
  for prog in "$@"; do
    read -r ns0 n0 <<< "${before[$prog]}"
    read -r ns1 n1 <<< "$(prog_stats "$prog")"
    line+=" | $prog: $(python3 -c "print(f'{($ns1 - $ns0) / max($n1 - $n0, 1):.1f} ns x {$n1 - $n0}')")"
  done
  echo "$line |"
}

echo 1 > /proc/sys/kernel/bpf_stats_enabled
measure_each=(1 "$cpus")
echo "| Call | Tenants at once (one per CPU) | Handler ns per run (runs) |"
echo "|---|---|---|"
for n in "${measure_each[@]}"; do
  measure cuLaunchKernel "init; launch 1 1 1 32 1 1 x$calls" "$n" gl_launch
  measure cuMemcpyHtoD_v2 "init; alloc 4096; htod 4096 x$calls" "$n" gl_call_entry gl_call_return
done
