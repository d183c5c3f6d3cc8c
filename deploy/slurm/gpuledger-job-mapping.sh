#!/bin/sh
# gpuledger's HPC job-mapping files (dcgm-exporter's convention), kept by
# Slurm's prolog and epilog on the compute node: one file per GPU index in
# $GPULEDGER_JOB_MAPPING_DIR, its lines the ids of the jobs holding that GPU.
# Installed as both the Prolog and the Epilog (slurm.conf, or a prolog.d /
# epilog.d entry): it tells which from $SLURM_SCRIPT_CONTEXT, else from its
# first argument (prolog | epilog). The agent reads the files with
# --allocation-source hpc-job-mapping --hpc-job-mapping-dir DIR.
#
# The GPUs are the ones slurmd gives the prolog in SLURM_JOB_GPUS (the node's
# GPU indices), never anything the job set. Each file is written whole and
# renamed into place, under a lock, so the agent never reads half of one.
set -eu

dir=${GPULEDGER_JOB_MAPPING_DIR:-/run/gpuledger/job-mapping}
context=${SLURM_SCRIPT_CONTEXT:-${1:-}}
job=${SLURM_JOB_ID:?SLURM_JOB_ID is not set: run me as the Prolog or Epilog of Slurm}
gpus=${SLURM_JOB_GPUS:-}

case "$job" in *[!0-9]*|'') echo "gpuledger-job-mapping: job id '$job' is not a number" >&2; exit 1 ;; esac
[ -n "$gpus" ] || exit 0  # the job holds no GPU

mkdir -p "$dir"
chmod 0755 "$dir"
exec 9>"$dir/.lock"
flock 9

for gpu in $(echo "$gpus" | tr ',' ' '); do
  case "$gpu" in *[!0-9]*|'') continue ;; esac
  file="$dir/$gpu"
  tmp="$dir/.$gpu.$job"
  { [ -f "$file" ] && grep -v -x -e "$job" "$file" || true; } >"$tmp"
  case "$context" in
    prolog*) echo "$job" >>"$tmp" ;;
    epilog*) ;;
    *)
      rm -f "$tmp"
      echo "gpuledger-job-mapping: neither prolog nor epilog: set SLURM_SCRIPT_CONTEXT or give one" >&2
      exit 1
      ;;
  esac
  if [ -s "$tmp" ]; then mv -f "$tmp" "$file"; else rm -f "$tmp" "$file"; fi
done
exit 0
