#!/usr/bin/env bash
# The README's main job: set up, then run the agent on the bundled CUDA driver
# simulator with simulated tenants in pod-shaped cgroups (no GPU needed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/gpuledger demo "$@"
