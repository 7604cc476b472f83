#!/bin/bash
# A PRIVATE PostgreSQL 15 instance for the tests that freeze (SIGSTOP) or restart the server,
# so that the shared development server is never disturbed. Used as a CTest fixture; the
# instance is the one scripts/servers.sh starts, under DIR instead of the shared run directory:
#   private_server.sh start DIR PORT   the first free port from PORT; writes DIR/url (role
#                                      sqlock_owner: owns the database, may end sessions)
#   private_server.sh restart DIR      pg_ctl restart -m immediate (a crash and recovery)
#   private_server.sh stop DIR         thaws, stops and removes the instance
# Without initdb (no postgresql-15) `start` writes no url: the tests then skip, or fail under
# SQLOCK_TEST_REQUIRE_ALL=1.
set -euo pipefail

cmd=$1
export SQLOCK_RUN_DIR=$2
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../scripts/servers.d/10-postgres.sh
source "$repo/scripts/servers.d/10-postgres.sh"  # postgres_as, postgres_bin, postgres_dir
data="$(postgres_dir)/data"
# Ports tried from the one given, when another run holds it.
port_tries=20

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

stop() {
  if [ -f "$data/postmaster.pid" ]; then
    # A frozen instance (a test that failed before thawing it) must be thawed to stop.
    pid=$(head -1 "$data/postmaster.pid")
    pkill -CONT -P "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true
    "$repo/scripts/servers.sh" stop postgres
  fi
  rm -rf "$SQLOCK_RUN_DIR"
}

case "$cmd" in
  start)
    stop
    mkdir -p "$SQLOCK_RUN_DIR"
    if [ ! -x "$(postgres_bin)/initdb" ]; then
      echo "private_server.sh: no initdb: the private-server tests will skip" >&2
      exit 0
    fi
    port=$3
    for ((i = 0; i < port_tries; i++)); do
      port_free "$port" && break
      port=$((port + 1))
    done
    SQLOCK_POSTGRES_PORT=$port "$repo/scripts/servers.sh" start postgres
    # Commits must survive the immediate restart: the waiter then really waits out the lease.
    echo "synchronous_commit = on" >>"$data/postgresql.conf"
    postgres_as "$(postgres_bin)/pg_ctl" -D "$data" reload >/dev/null
    # shellcheck source=/dev/null
    source "$SQLOCK_RUN_DIR/env.sh"
    echo "$SQLOCK_TEST_POSTGRES_URL" >"$SQLOCK_RUN_DIR/url"
    ;;
  restart)
    postgres_as "$(postgres_bin)/pg_ctl" -D "$data" -l "$(postgres_dir)/server.log" -m immediate \
      -w -t 60 restart >/dev/null
    ;;
  stop)
    stop
    ;;
  *)
    echo "usage: $0 start DIR PORT | restart DIR | stop DIR" >&2
    exit 2
    ;;
esac
