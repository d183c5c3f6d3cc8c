#!/usr/bin/env bash
# require_tool.sh TOOL|PATH... -- COMMAND...: runs COMMAND when every tool is on
# PATH (or every path exists); else skips (exit 77), or fails under CI=true, so
# that CI cannot pass without having run the test.
set -euo pipefail
missing=()
while (($#)) && [[ $1 != -- ]]; do
  if [[ $1 == /* ]]; then [[ -e $1 ]] || missing+=("$1"); else command -v "$1" >/dev/null || missing+=("$1"); fi
  shift
done
shift
if ((${#missing[@]})); then
  echo "missing: ${missing[*]} (scripts/setup.sh installs them)" >&2
  [[ ${CI:-} == true ]] && exit 1
  exit 77
fi
exec "$@"
