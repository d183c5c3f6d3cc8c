#!/usr/bin/env bash
# The README's main job: set up only what the demo runs (the runtime packages,
# the binary and the simulators; scripts/setup.sh --demo), then run the agent on
# the bundled CUDA driver simulator with simulated tenants in pod-shaped cgroups
# (no GPU needed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --demo
exec build/gpuledger demo "$@"
