#!/bin/bash
# A PRIVATE PostgreSQL 15 instance for the tests that freeze (SIGSTOP) or restart the server,
# so that the shared development server is never disturbed. Used as a CTest fixture:
#   private_server.sh start DIR PORT   initdb + pg_ctl start under DIR on the first free port
#                                      from PORT; writes DIR/url (role sqlock_owner, schema
#                                      owner, may terminate sessions) and DIR/port
#   private_server.sh restart DIR      pg_ctl restart -m immediate (a crash and recovery)
#   private_server.sh stop DIR         pg_ctl stop -m immediate and removes DIR
# Without initdb (no postgresql-15) `start` writes no url: the tests then skip, or fail under
# SQLOCK_TEST_REQUIRE_ALL=1. initdb/pg_ctl refuse root: as root they run as OS user postgres.
set -euo pipefail

cmd=$1
dir=$2
bin=${SQLOCK_POSTGRES_BIN:-/usr/lib/postgresql/15/bin}
# Ports tried from the one given, when another run holds it.
port_tries=20

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

stop() {
  if [ -f "$dir/data/postmaster.pid" ]; then
    # A frozen instance (a test failed before thawing it) must be thawed to stop.
    pid=$(head -1 "$dir/data/postmaster.pid")
    pkill -CONT -P "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

case "$cmd" in
  start)
    stop
    mkdir -p "$dir"
    if [ ! -x "$bin/initdb" ]; then
      echo "private_server.sh: $bin/initdb not found: the private-server tests will skip" >&2
      exit 0
    fi
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
    as_owner "$bin/initdb" -D "$dir/data" -U postgres -E UTF8 --locale=C.UTF-8 \
      --auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1 || {
      cat "$dir/initdb.log" >&2
      exit 1
    }
    port=$3
    for ((i = 0; i < port_tries; i++)); do
      port_free "$port" && break
      port=$((port + 1))
    done
    cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 60
shared_buffers = 16MB
fsync = off
synchronous_commit = on
full_page_writes = off
log_min_messages = warning
CONF
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null || {
      cat "$dir/server.log" >&2
      exit 1
    }
    as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d postgres \
      >/dev/null <<SQL
CREATE ROLE sqlock_owner LOGIN PASSWORD 'Pr1vate-S3cret' CREATEROLE;
GRANT pg_signal_backend TO sqlock_owner;
CREATE DATABASE sqlock OWNER sqlock_owner;
SQL
    echo "$port" >"$dir/port"
    echo "postgresql://sqlock_owner:Pr1vate-S3cret@127.0.0.1:$port/sqlock" >"$dir/url"
    ;;
  restart)
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m immediate -w -t 60 restart \
      >/dev/null
    ;;
  stop)
    stop
    ;;
  *)
    echo "usage: $0 start DIR PORT | restart DIR | stop DIR" >&2
    exit 2
    ;;
esac
