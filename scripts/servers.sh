#!/usr/bin/env bash
# Starts (or stops) the test servers on loopback, each with its own data directory under
# $SQLOCK_RUN_DIR (default /tmp/sqlock-servers), and writes $SQLOCK_RUN_DIR/env.sh with the
# SQLOCK_TEST_*_URL variables the tests read. One file per server in scripts/servers.d/ defines
# start_<name> and stop_<name>; a server script calls `emit VAR VALUE` for each URL it offers.
#   scripts/servers.sh start [name...]    scripts/servers.sh stop [name...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export SQLOCK_RUN_DIR=${SQLOCK_RUN_DIR:-/tmp/sqlock-servers}
mkdir -p "$SQLOCK_RUN_DIR"
envfile="$SQLOCK_RUN_DIR/env.sh"

emit() { echo "export $1='$2'" >>"$envfile"; }
# wait_for DESCRIPTION SECONDS COMMAND...: retries COMMAND until it succeeds.
wait_for() {
  local what=$1 secs=$2
  shift 2
  for _ in $(seq 1 $((secs * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "servers.sh: $what did not come up within ${secs}s" >&2
  return 1
}

# stop_pid_file FILE: ends the process whose pid FILE holds (TERM, up to 30 s, then KILL) and
# removes FILE; nothing when FILE is missing.
stop_pid_file() {
  local file=$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

for f in "$here"/servers.d/*.sh; do
  [ -e "$f" ] || continue
  # shellcheck source=/dev/null
  source "$f"
done

cmd=${1:-start}
shift || true
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$here"/servers.d/*.sh; do
    [ -e "$f" ] || continue
    n=$(basename "$f" .sh)
    names+=("${n#*-}")
  done
fi

case "$cmd" in
  start)
    : >"$envfile"
    for n in "${names[@]}"; do
      echo "servers.sh: starting $n" >&2
      "start_$n"
    done
    echo "servers.sh: URLs in $envfile" >&2
    ;;
  stop)
    for n in "${names[@]}"; do "stop_$n" || true; done
    ;;
  *)
    echo "usage: servers.sh start|stop [name...]" >&2
    exit 64
    ;;
esac
