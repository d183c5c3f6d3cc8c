#!/usr/bin/env bash
# Test-only npm packages (tests/deploy/package-lock.json): the Kubernetes and
# prometheus-operator schemas the manifests are validated against, offline, by
# the tests. Installed into tests/deploy/node_modules, nowhere else; skipped
# when that is already up to date with the lock file.
set -euo pipefail
cd "$(dirname "$0")/../tests/deploy"
stamp=node_modules/.package-lock.json
if [[ -f $stamp && $stamp -nt package-lock.json ]]; then exit 0; fi
command -v npm >/dev/null || { echo "install-test-tools: npm is missing (apt-get install npm)" >&2; exit 1; }
echo "install-test-tools: npm ci in tests/deploy"
npm ci --no-audit --no-fund --loglevel=error
