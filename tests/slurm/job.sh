#!/bin/sh
# A test job: joins the cgroup the Prolog made for it (what slurmd's cgroup
# plugin does on a real node, tests/slurm/slurm_cluster.sh says why), then
# runs its tenant: the command line given, else a sleep.
cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
echo $$ >"$cg2/slurm/uid_$(id -u)/job_$SLURM_JOB_ID/cgroup.procs"
if [ $# -gt 0 ]; then exec "$@"; fi
exec sleep "${GL_JOB_SECONDS:-10}"
