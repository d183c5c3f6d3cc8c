#!/bin/sh
# Slurm Epilog: the job out of gpuledger's job-mapping files.
exec "$(dirname "$0")/gpuledger-job-mapping.sh" epilog
