#!/bin/bash
# A single-node Slurm cluster (Debian's slurmctld, slurmd, munge 22.05) in a
# private directory, for the tests: `slurm_cluster.sh start DIR` brings it up
# and prints the environment to talk to it (SLURM_CONF); `stop DIR` ends
# every daemon it started (by their pid files) and removes nothing else.
#
# - munged on a socket of its own (AuthInfo=socket=...), its own key.
# - Two GPUs as GRES on device nodes made here (mknod c 195 0/1): slurmd
#   only checks the files exist; nothing opens them.
# - This machine has hybrid cgroups and no systemd as PID 1: the cgroup/v2
#   plugin refuses hybrid mode ("Hybrid mode is not supported") and the v1
#   one leaves tasks in the v2 root, where gpuledger cannot tell them apart.
#   So proctrack/linuxproc and task/none, and the Prolog does what slurmd's
#   cgroup plugin does on a real node: makes <cgroup2>/slurm/uid_<u>/job_<n>
#   (where identity/workload_classifier.h recognises a job); the job's own
#   script joins it first thing (tests/slurm/job.sh), and the Epilog removes
#   it. The Prolog and Epilog also run deploy/slurm/'s job-mapping scripts.
set -euo pipefail
cmd=$1
dir=$(realpath -m "$2")
repo=$(cd "$(dirname "$0")/../.." && pwd)

stop() {
  for p in slurmd slurmctld munged; do
    [ -f "$dir/$p.pid" ] || continue
    pid=$(cat "$dir/$p.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/$p.pid"
  done
}

if [ "$cmd" = stop ]; then stop; exit 0; fi

cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$cg2" ] || { echo "no cgroup2 mount" >&2; exit 1; }
mkdir -p "$dir"/{state,spool,log,dev,map,munge}
chmod 711 "$dir/munge"
for i in 0 1; do [ -e "$dir/dev/nvidia$i" ] || mknod "$dir/dev/nvidia$i" c 195 $i; done
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
port=$((20000 + RANDOM % 20000))
node=gltest

cat >"$dir/prolog.sh" <<P
#!/bin/sh
# The cgroup slurmd's cgroup plugin would make, then the job-mapping files.
mkdir -p "$cg2/slurm/uid_\${SLURM_JOB_UID}/job_\${SLURM_JOB_ID}"
GPULEDGER_JOB_MAPPING_DIR="$dir/map" exec "$repo/deploy/slurm/gpuledger-job-mapping.sh" prolog
P
cat >"$dir/epilog.sh" <<P
#!/bin/sh
GPULEDGER_JOB_MAPPING_DIR="$dir/map" "$repo/deploy/slurm/gpuledger-job-mapping.sh" epilog
job="$cg2/slurm/uid_\${SLURM_JOB_UID}/job_\${SLURM_JOB_ID}"
for _ in \$(seq 50); do rmdir "\$job" 2>/dev/null && break; sleep 0.1; done
exit 0
P
chmod +x "$dir/prolog.sh" "$dir/epilog.sh"

cat >"$dir/slurm.conf" <<C
ClusterName=gltest
SlurmctldHost=$(hostname -s)(127.0.0.1)
MailProg=/bin/true
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
GresTypes=gpu
MpiDefault=none
ReturnToService=2
MinJobAge=600
PrologFlags=Alloc
Prolog=$dir/prolog.sh
Epilog=$dir/epilog.sh
NodeName=$node NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
C
cat >"$dir/gres.conf" <<C
NodeName=$node Name=gpu File=$dir/dev/nvidia[0-1]
C

munged --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" --pid-file="$dir/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" --force
export SLURM_CONF="$dir/slurm.conf"
slurmctld -i -f "$dir/slurm.conf"
slurmd -N "$node" -f "$dir/slurm.conf"
for _ in $(seq 200); do
  if sinfo -h -o %T 2>/dev/null | grep -qx idle; then echo "SLURM_CONF=$dir/slurm.conf"; exit 0; fi
  sleep 0.1
done
echo "the cluster did not come up; logs in $dir/log" >&2
tail -n 20 "$dir"/log/*.log >&2
stop
exit 1
