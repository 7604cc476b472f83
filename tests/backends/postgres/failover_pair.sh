#!/bin/bash
# A PRIVATE PostgreSQL primary and its hot standby for the failover tests (CTest fixture):
# scripts/servers.sh's postgres and postgres_standby under DIR, on the first two free ports
# from PORT. Never touches the shared servers.
#   failover_pair.sh start DIR PORT   writes DIR/primary_url, DIR/standby_url and DIR/url (both
#                                     hosts, the standby first, target_session_attrs=read-write)
#   failover_pair.sh caught_up DIR    waits (30 s at most) until the standby replayed everything
#                                     the primary wrote so far
#   failover_pair.sh failover DIR     stops the primary (immediate, as a crash) and promotes the
#                                     standby; returns once it accepts writes
#   failover_pair.sh stop DIR         stops both and removes DIR
set -euo pipefail

cmd=$1
export SQLOCK_RUN_DIR=$2
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../scripts/servers.d/10-postgres.sh
source "$repo/scripts/servers.d/10-postgres.sh" # postgres_as, postgres_bin, postgres_dir
# shellcheck source=../../../scripts/servers.d/12-postgres_standby.sh
source "$repo/scripts/servers.d/12-postgres_standby.sh" # postgres_standby_dir

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

psql_at() { # psql_at SOCKET_DIR PORT SQL
  postgres_as "$(postgres_bin)/psql" -X -q -At -h "$1" -p "$2" -U postgres -d postgres -c "$3"
}

case "$cmd" in
  start)
    "$repo/scripts/servers.sh" stop postgres_standby postgres >/dev/null 2>&1 || true
    rm -rf "$SQLOCK_RUN_DIR"
    mkdir -p "$SQLOCK_RUN_DIR"
    if [ ! -x "$(postgres_bin)/initdb" ]; then
      echo "failover_pair.sh: no initdb: the failover tests will skip" >&2
      exit 0
    fi
    port=$3
    for ((i = 0; i < 20; i++)); do
      port_free "$port" && port_free $((port + 1)) && break
      port=$((port + 2))
    done
    SQLOCK_POSTGRES_PORT=$port SQLOCK_POSTGRES_STANDBY_PORT=$((port + 1)) \
      "$repo/scripts/servers.sh" start postgres postgres_standby
    echo "$port" >"$SQLOCK_RUN_DIR/port"
    # shellcheck source=/dev/null
    source "$SQLOCK_RUN_DIR/env.sh"
    echo "$SQLOCK_TEST_POSTGRES_URL" >"$SQLOCK_RUN_DIR/primary_url"
    echo "$SQLOCK_TEST_POSTGRES_STANDBY_URL" >"$SQLOCK_RUN_DIR/standby_url"
    echo "postgresql://sqlock_owner:sqlock_owner@127.0.0.1:$((port + 1)),127.0.0.1:$port/sqlock?target_session_attrs=read-write" \
      >"$SQLOCK_RUN_DIR/url"
    ;;
  caught_up)
    port=$(cat "$SQLOCK_RUN_DIR/port")
    lsn=$(psql_at "$(postgres_dir)" "$port" "SELECT pg_current_wal_lsn()")
    for _ in $(seq 1 150); do
      ok=$(psql_at "$(postgres_standby_dir)" $((port + 1)) \
        "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn")
      [ "$ok" = t ] && exit 0
      sleep 0.2
    done
    echo "failover_pair.sh: the standby did not replay $lsn within 30 s" >&2
    exit 1
    ;;
  failover)
    stop_postgres
    postgres_as "$(postgres_bin)/pg_ctl" -D "$(postgres_standby_dir)/data" -w -t 60 promote \
      >/dev/null
    ;;
  stop)
    "$repo/scripts/servers.sh" stop postgres_standby postgres >/dev/null 2>&1 || true
    rm -rf "$SQLOCK_RUN_DIR"
    ;;
  *)
    echo "usage: $0 start DIR PORT | caught_up DIR | failover DIR | stop DIR" >&2
    exit 2
    ;;
esac
