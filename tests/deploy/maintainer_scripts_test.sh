#!/usr/bin/env bash
# The scripts that remove gpuledger from a host without leaving a probe:
# the systemd unit's ExecStopPost (deploy/systemd/stop-post) and the Debian
# package's prerm/postrm (deploy/debian), run against real pins made by the
# agent binary (real BPF, the simulated driver) in a bpffs of this test's own,
# mounted at /sys/fs/bpf in a private mount namespace - the default pin
# directory, so the scripts run exactly as installed. systemctl is a stand-in
# on PATH that answers as told and records its calls.
# Usage: maintainer_scripts_test.sh DEPLOY_DIR GPULEDGER_BINARY SIM_LIBCUDA
set -euo pipefail
deploy=$1 gpuledger=$2 simlib=$3
if [[ $(id -u) -ne 0 ]]; then
  echo "needs root (BPF, a bpffs of its own)"
  [[ ${CI:-} == true ]] && exit 1
  exit 77
fi
if [[ -z ${GL_PRIVATE_MOUNTS:-} ]]; then
  GL_PRIVATE_MOUNTS=1 exec unshare --mount --propagation private "$0" "$@"
fi
mount -t bpf bpf /sys/fs/bpf
pins_dir=/sys/fs/bpf/gpuledger
work=$(mktemp -d)
agent=
cleanup() {
  [[ -n $agent ]] && kill -KILL "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
  "$gpuledger" uninstall >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [[ -f $work/agent.log ]] && tail -20 "$work/agent.log"; exit 1; }

mkdir "$work/bin" "$work/lib"
ln -s "$gpuledger" "$work/bin/gpuledger"
cp "$deploy/systemd/stop-post" "$work/lib/stop-post"  # installed beside the binary
ln -s "$gpuledger" "$work/lib/gpuledger"
cat >"$work/bin/systemctl" <<'EOF'
#!/bin/sh
echo "$*" >>"$FAKE_SYSTEMCTL_LOG"
case "$1" in
  is-enabled) [ "$FAKE_ENABLED" = yes ] ;;
  list-jobs) [ -z "$FAKE_JOB" ] || echo "42 gpuledger.service $FAKE_JOB running" ;;
esac
EOF
chmod +x "$work/bin/systemctl"
export PATH="$work/bin:$PATH" FAKE_SYSTEMCTL_LOG="$work/systemctl.log" FAKE_ENABLED=no FAKE_JOB=
: >"$FAKE_SYSTEMCTL_LOG"

pins() { find "$pins_dir" -type f 2>/dev/null | wc -l; }
start_agent() {
  "$gpuledger" agent --listen 127.0.0.1:0 --no-nvml --pod-resources-socket "" --no-discovery --cuda-lib "$simlib" \
    --store "" --no-xid --keep-pins-on-exit >"$work/agent.log" 2>&1 &
  agent=$!
  for _ in $(seq 1 1000); do
    grep -q "serving http" "$work/agent.log" && return 0
    kill -0 "$agent" 2>/dev/null || fail "the agent exited during startup"
    sleep 0.02
  done
  fail "the agent did not serve within 20 s"
}
stop_agent() {
  kill "-$1" "$agent"
  { wait "$agent"; } 2>/dev/null || true
  agent=
}

# The unit's ExecStopPost, as systemd runs it after the agent exited.
start_agent
pinned=$(pins)
[[ $pinned -gt 0 ]] || fail "nothing pinned by the agent"
stop_agent TERM
[[ $(pins) -eq $pinned ]] || fail "SIGTERM with --keep-pins-on-exit did not keep the $pinned pins ($(pins))"
stop_post() { SERVICE_RESULT=$1 FAKE_ENABLED=$2 FAKE_JOB=$3 "$work/lib/stop-post"; }
stop_post success yes "" >/dev/null
[[ $(pins) -eq $pinned ]] || fail "stop-post removed the pins of an enabled unit"
stop_post success no restart >/dev/null
[[ $(pins) -eq $pinned ]] || fail "stop-post removed the pins during a restart"
stop_post signal no "" >/dev/null
[[ $(pins) -eq $pinned ]] || fail "stop-post removed the pins after a crash (Restart= brings the next agent)"
out=$(stop_post success no "")
[[ $out == "removed $pinned BPF pins under $pins_dir: the probes are detached"* ]] || fail "stop-post said: $out"
[[ ! -e $pins_dir ]] || fail "stop-post left $pins_dir"
out=$(stop_post success no "")
[[ $out == "nothing pinned in $pins_dir" ]] || fail "stop-post with nothing pinned said: $out"
echo "ok: stop-post keeps the pins on restart, crash and enabled stop, and removes them at a disabled stop"

# The package's prerm: an upgrade keeps, a removal removes (with and without systemd).
start_agent
stop_agent KILL
pinned=$(pins)
[[ $pinned -gt 0 ]] || fail "SIGKILL left no pins"
"$deploy/debian/prerm" upgrade 2.0 >/dev/null || fail "prerm upgrade failed"
[[ $(pins) -eq $pinned ]] || fail "prerm upgrade removed the pins: the new version's agent would lose them"
: >"$FAKE_SYSTEMCTL_LOG"
# A host run by systemd: /run/systemd/system exists (in a /run of the test's own).
# shellcheck disable=SC2016 # $0 is expanded by the inner sh
out=$(unshare --mount --propagation private sh -c \
  'mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system && exec "$0" remove' "$deploy/debian/prerm") ||
  fail "prerm remove failed: $out"
[[ $out == "removed $pinned BPF pins under $pins_dir"* ]] || fail "prerm remove said: $out"
[[ ! -e $pins_dir ]] || fail "prerm remove left $pins_dir"
grep -qx "disable --now gpuledger.service" "$FAKE_SYSTEMCTL_LOG" || fail "prerm did not disable and stop the unit"
out=$("$deploy/debian/prerm" remove) || fail "prerm remove with nothing pinned failed"
[[ $out == "nothing pinned in $pins_dir" ]] || fail "prerm remove with nothing pinned said: $out"
# An agent still holding the pins: the removal goes on, the pins stay, and it says what to do.
start_agent
out=$("$deploy/debian/prerm" remove 2>&1) || fail "prerm remove failed with an agent running"
grep -q "stop the agent that holds them and run 'gpuledger uninstall'" <<<"$out" || fail "prerm said: $out"
[[ $(pins) -gt 0 ]] || fail "prerm removed the pins of a running agent"
stop_agent KILL
: >"$FAKE_SYSTEMCTL_LOG"
# shellcheck disable=SC2016 # $0 is expanded by the inner sh
unshare --mount --propagation private sh -c \
  'mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system && exec "$0" remove' "$deploy/debian/postrm" ||
  fail "postrm remove failed"
grep -qx "daemon-reload" "$FAKE_SYSTEMCTL_LOG" || fail "postrm did not reload systemd"
"$deploy/debian/postrm" purge || fail "postrm purge failed"
echo "ok: prerm keeps the pins on upgrade and removes them on removal; postrm reloads systemd"
