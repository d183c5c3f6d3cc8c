#!/bin/bash
# Real Slurm (Debian's slurmctld, slurmd, munge 22.05: tests/slurm/slurm_cluster.sh)
# and the agent with its defaults, as an HPC admin would run it: auto must take
# Slurm (a root slurmd runs here) and read the jobs' GPUs from the files
# deploy/slurm/'s Prolog writes (`real_slurm_test.sh BUILD files`: with
# --hpc-job-mapping-dir) or from the controller (`... controller`: scontrol's
# GRES, no flag at all). Two jobs, one GPU
# each, under two accounts, on a node of two simulated GPUs (NVML simulator),
# 5 s windows at 3.60 EUR an hour. Checked:
#   - each job's held GPU-hours (`gpuledger job`) equal Slurm's own
#     (scontrol: (EndTime - StartTime) x its GPUs) within one window;
#   - the jobs' bills grouped by their Slurm account (from scontrol), plus
#     __unallocated__, add up to the GPUs' cost exactly, and no window is
#     __allocation_unknown__;
#   - `teams:` rules on the Slurm account (from squeue, slurm/slurm_jobs.h)
#     name each job's team: the bill by team is the bill by account;
#   - the windows record each job's Slurm user and account (squeue's, store
#     schema 10): `report --by account` and `--by user` are, to the micro-unit,
#     each account's and user's jobs' bills plus __unallocated__, adding up to
#     the GPUs' cost;
#   - the Epilog removed the files and the jobs' cgroups.
# Needs root, Slurm and munge (scripts/setup.sh installs them); without them
# it skips (77), except under CI=true where it fails.
set -euo pipefail
build=$1
holders=${2:-files}
repo=$(cd "$(dirname "$0")/../.." && pwd)
missing=""
for t in slurmctld slurmd munged sbatch scontrol; do command -v $t >/dev/null || missing="$missing $t"; done
if [ -n "$missing" ] || [ "$(id -u)" != 0 ]; then
  echo "needs root and$missing (apt-get install slurmctld slurmd slurm-client munge)" >&2
  [ "${CI:-}" = true ] && exit 1
  exit 77
fi
work=$(mktemp -d /tmp/gl_slurm_XXXXXX)
agent=""
cleanup() {
  [ -n "$agent" ] && kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
  "$repo/tests/slurm/slurm_cluster.sh" stop "$work/cluster" || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; tail -n 30 "$work/agent.log" >&2 || true; exit 1; }

eval "export $("$repo/tests/slurm/slurm_cluster.sh" start "$work/cluster")"
map="$work/cluster/map"
cat >"$work/nvml.json" <<J
{"driver_version":"550.90.07","devices":[
 {"uuid":"GPU-00000000-0000-0000-0000-00000000aaaa","name":"NVIDIA H100 80GB HBM3","pci_bus_id":"00000000:07:00.0",
  "minor":0,"utilization":{"gpu":0,"memory":0},"memory":{"total":85899345920,"used":0}},
 {"uuid":"GPU-00000000-0000-0000-0000-00000000bbbb","name":"NVIDIA H100 80GB HBM3","pci_bus_id":"00000000:08:00.0",
  "minor":1,"utilization":{"gpu":0,"memory":0},"memory":{"total":85899345920,"used":0}}]}
J
printf 'currency: EUR\ndefault_per_hour: 3.60\nwindow_seconds: 5\n' >"$work/prices.yaml"
cat >"$work/config.yaml" <<Y
teams:
  - {match: slurm_account, pattern: "phys*", team: physics-dept}
  - {match: slurm_account, pattern: chemistry, team: chemistry-dept}
Y
GPULEDGER_NVML_SIM_CONFIG="$work/nvml.json" "$build/gpuledger" agent --listen 127.0.0.1:0 --store "$work/ledger.db" \
  --prices "$work/prices.yaml" --nvml-lib "$build/sim/nvml/libnvidia-ml.so.1" --nvml-interval-ms 1000 \
  --ledger-interval-ms 1000 --no-bpf-pins --no-discovery --cuda-lib "$build/sim/lib/libcuda.so.1" \
  --probe-set full --no-nvidia-ioctl --no-xid \
  $([ "$holders" = files ] && echo --hpc-job-mapping-dir "$map") --config "$work/config.yaml" >"$work/agent.log" 2>&1 &
agent=$!
for _ in $(seq 200); do grep -q "serving" "$work/agent.log" && break; sleep 0.1; done
if [ "$holders" = files ]; then
  grep -q "allocation source hpc-job-mapping (auto: slurmd runs on this node" "$work/agent.log" ||
    fail "auto did not take Slurm's job-mapping files"
else
  grep -q "allocation source slurm (auto: slurmd runs on this node)" "$work/agent.log" ||
    fail "auto did not take Slurm's controller"
  "$build/gpuledger" doctor --nvml-lib "$build/sim/nvml/libnvidia-ml.so.1" >"$work/doctor.txt" 2>&1 || true
  grep -q "allocation.*the controller knows this host as node gltest" "$work/doctor.txt" ||
    fail "doctor did not name this node as the controller knows it: $(grep allocation "$work/doctor.txt")"
fi

# (the agent probes the simulator's libcuda, every launch under --probe-set full: root and BPF)
# Job a runs a simulated tenant (the CUDA driver simulator: 2000 kernel
# launches the agent's probes count in the job's cgroup), job b only sleeps.
a=$(sbatch --parsable --gres=gpu:1 -A physics -o "$work/a.out" "$repo/tests/slurm/job.sh" \
      "$build/gpuledger-cudasim" "init; launch 1 1 1 1 1 1 x2000; sleep-ms 12000")
b=$(sbatch --parsable --gres=gpu:1 -A chemistry -o "$work/b.out" --export=ALL,GL_JOB_SECONDS=7 "$repo/tests/slurm/job.sh")
for _ in $(seq 600); do
  states=$(for j in "$a" "$b"; do scontrol show job "$j" --oneliner 2>/dev/null || true; done |
             grep -o 'JobState=[A-Z]*' | sort -u | tr '\n' ' ' || true)
  [ "$states" = "JobState=COMPLETED " ] && break
  sleep 0.1
done
[ "$states" = "JobState=COMPLETED " ] || fail "jobs did not complete: $states"
# The window the jobs ended in closes: polled in the store, 30 s at most.
ended=$(for j in "$a" "$b"; do scontrol show job "$j" --oneliner | grep -o 'EndTime=[^ ]*' | cut -d= -f2; done |
          python3 -c 'import datetime, sys; print(int(max(datetime.datetime.fromisoformat(l.strip()).timestamp() for l in sys.stdin)))')
for _ in $(seq 300); do
  last=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute("SELECT coalesce(max(end), 0) FROM windows").fetchone()[0])' "$work/ledger.db" 2>/dev/null || echo 0)
  [ "$last" -gt "$ended" ] && break
  sleep 0.1
done
[ "$last" -gt "$ended" ] || fail "no window closed after the jobs ended ($ended; the last ends at $last)"
kill -TERM "$agent"; wait "$agent" || true; agent=""
[ -z "$(ls "$map")" ] || fail "the Epilog left job-mapping files: $(ls "$map")"

cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
python3 - "$build/gpuledger" "$work" "$a" "$b" "$cg2" <<'PY'
import datetime, json, os, re, subprocess, sys, time
gl, work, jobs, cg2 = sys.argv[1], sys.argv[2], sys.argv[3:5], sys.argv[5]
# One range for every report: the default ends at `now`, in whole seconds, and
# a window is in a range by its start, so the window the agent stopped in
# (stored at the stop) was missing from a report run in the very second it
# started and present in the next one. A fixed end reads the same store alike.
until = str(int(time.time()) + 3600)
def slurm(job):
    text = subprocess.run(["scontrol", "show", "job", "-d", job, "--oneliner"], check=True, capture_output=True, text=True).stdout
    f = dict(re.findall(r"(\w+)=(\S*)", text))
    t = lambda s: datetime.datetime.fromisoformat(s).timestamp()
    gpus = int(re.search(r"gpu:(\d+)", f["JOB_GRES"]).group(1))
    return f["Account"], f["UserId"].split("(")[0], (t(f["EndTime"]) - t(f["StartTime"])) * gpus
bill = json.loads(subprocess.run([gl, "report", "--store", f"{work}/ledger.db", "--format", "json", "--by", "workload",
                                  "--to", until],
                                 check=True, capture_output=True, text=True).stdout)
rows = {r["key"]: r for r in bill["rows"]}
total = bill["total"]["cost_total_micros"]
assert "__allocation_unknown__" not in rows, rows.keys()
assert rows[f"slurm/{jobs[0]}"]["launches"] == 2000, rows[f"slurm/{jobs[0]}"]  # the tenant's, exactly
by_account, by_user = {}, {}
for job in jobs:
    account, user, held = slurm(job)
    mine = json.loads(subprocess.run([gl, "job", job, "--store", f"{work}/ledger.db", "--format", "json"], check=True,
                                     capture_output=True, text=True).stdout)
    print(f"job {job} ({account}): Slurm {held:.0f} GPU-s, gpuledger {mine['gpu_hours_held'] * 3600:.0f} GPU-s held, "
          f"{mine['cost_micros']} micro-EUR")
    assert abs(mine["gpu_hours_held"] * 3600 - held) <= 5, (job, held, mine)
    assert mine["cost_micros"] == rows[f"slurm/{job}"]["cost_total_micros"]
    by_account[account] = by_account.get(account, 0) + mine["cost_micros"]
    by_user[user] = by_user.get(user, 0) + mine["cost_micros"]
    assert not os.path.exists(f"{cg2}/slurm/uid_0/job_{job}"), "the Epilog left the job's cgroup"
rest = sum(r["cost_total_micros"] for k, r in rows.items() if not k.startswith("slurm/"))
print(f"by account {by_account}, __unallocated__ {rest}, GPUs' cost {total}")
assert sum(by_account.values()) + rest == total
assert set(k for k in rows if not k.startswith("slurm/")) <= {"__unallocated__"}, rows.keys()
teams = json.loads(subprocess.run([gl, "report", "--store", f"{work}/ledger.db", "--format", "json", "--by", "team",
                                   "--to", until],
                                  check=True, capture_output=True, text=True).stdout)
by_team = {r["key"]: r["cost_total_micros"] for r in teams["rows"]}
print(f"by team {by_team}")
assert by_team.get("physics-dept") == by_account["physics"], by_team
assert by_team.get("chemistry-dept") == by_account["chemistry"], by_team
# The node's bill by Slurm account and by Slurm user (the controller's, as the
# windows recorded them): each the jobs' bills, exactly, and __unallocated__.
for by, want in (("account", by_account), ("user", by_user)):
    got = json.loads(subprocess.run([gl, "report", "--store", f"{work}/ledger.db", "--format", "json", "--by", by,
                                     "--to", until],
                                    check=True, capture_output=True, text=True).stdout)
    rows_by = {r["key"]: r["cost_total_micros"] for r in got["rows"]}
    print(f"by {by} {rows_by}, GPUs' cost {got['total']['cost_total_micros']}")
    assert rows_by == {**want, **({"__unallocated__": rest} if rest else {})}, (by, rows_by, want, rest)
    assert sum(rows_by.values()) == got["total"]["cost_total_micros"] == total
PY
echo ok
