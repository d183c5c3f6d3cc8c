#!/bin/sh
# Slurm Prolog: the job's GPUs into gpuledger's job-mapping files.
exec "$(dirname "$0")/gpuledger-job-mapping.sh" prolog
