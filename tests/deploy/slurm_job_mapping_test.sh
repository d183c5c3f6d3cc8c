#!/bin/sh
# deploy/slurm/: the prolog writes each of the job's GPUs' files, two jobs on
# one GPU (shards) share its file, and each epilog takes only its own job out;
# a job id that is no number is refused.
set -eu
scripts=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export GPULEDGER_JOB_MAPPING_DIR="$dir/map"
fail() { echo "FAIL: $*" >&2; exit 1; }
same() { [ "$(cat "$1")" = "$2" ] || fail "$1: '$(cat "$1")', expected '$2'"; }

SLURM_JOB_ID=42 SLURM_JOB_GPUS=0,1 "$scripts/prolog.sh"
SLURM_JOB_ID=43 SLURM_JOB_GPUS=1 SLURM_SCRIPT_CONTEXT=prolog_slurmd "$scripts/gpuledger-job-mapping.sh"
same "$dir/map/0" "42"
same "$dir/map/1" "$(printf '42\n43')"
SLURM_JOB_ID=42 SLURM_JOB_GPUS=0,1 "$scripts/epilog.sh"
[ ! -e "$dir/map/0" ] || fail "the epilog left GPU 0's file"
same "$dir/map/1" "43"
SLURM_JOB_ID=43 SLURM_JOB_GPUS=1 SLURM_SCRIPT_CONTEXT=epilog_slurmd "$scripts/gpuledger-job-mapping.sh"
[ ! -e "$dir/map/1" ] || fail "the epilog left GPU 1's file"
if SLURM_JOB_ID='1;x' SLURM_JOB_GPUS=0 "$scripts/prolog.sh" 2>/dev/null; then fail "a job id that is no number"; fi
SLURM_JOB_ID=44 "$scripts/prolog.sh"  # no GPU: nothing written
[ -z "$(ls "$dir/map")" ] || fail "files left: $(ls "$dir/map")"
echo ok
