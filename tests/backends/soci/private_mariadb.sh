#!/bin/bash
# A PRIVATE MariaDB instance for the SOCI tests that freeze (SIGSTOP) or restart the server,
# so that the shared development server is never disturbed. Used as a CTest fixture; the
# instance is the one scripts/servers.sh starts, under DIR instead of the shared run directory:
#   private_mariadb.sh start DIR PORT   the first free port from PORT; writes DIR/url (soci+mysql)
#   private_mariadb.sh restart DIR      kill -9 and start again on the same data (a crash)
#   private_mariadb.sh stop DIR         thaws, stops and removes the instance
# Without mariadbd `start` writes no url: the tests then skip, or fail under
# SQLOCK_TEST_REQUIRE_ALL=1.
set -euo pipefail

cmd=$1
export SQLOCK_RUN_DIR=$2
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../scripts/servers.d/20-mysql.sh
source "$repo/scripts/servers.d/20-mysql.sh"  # mysql_dir, mysql_server_bin
d=$(mysql_dir)

server_pid() {
  cat "$d/mysqld.pid" 2>/dev/null || true
}

stop() {
  local pid
  pid=$(server_pid)
  if [ -n "$pid" ]; then
    kill -CONT "$pid" 2>/dev/null || true  # a test that failed before thawing it
    "$repo/scripts/servers.sh" stop mysql
  fi
  rm -rf "$SQLOCK_RUN_DIR"
}

case "$cmd" in
  start)
    stop
    mkdir -p "$SQLOCK_RUN_DIR"
    if ! mysql_server_bin >/dev/null 2>&1; then
      echo "private_mariadb.sh: no mariadbd: the private-server tests will skip" >&2
      exit 0
    fi
    port=$3
    for _ in $(seq 20); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
      port=$((port + 1))
    done
    SQLOCK_MYSQL_PORT=$port "$repo/scripts/servers.sh" start mysql >/dev/null
    # shellcheck source=/dev/null
    source "$SQLOCK_RUN_DIR/env.sh"
    echo "soci+$SQLOCK_TEST_MYSQL_URL" >"$SQLOCK_RUN_DIR/url"
    ;;
  restart)
    pid=$(server_pid)
    kill -CONT "$pid" 2>/dev/null || true
    kill -9 "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    "$(mysql_server_bin)" --defaults-file="$d/my.cnf" >>"$d/stdout.log" 2>&1 &
    ;;
  stop)
    stop
    ;;
  *)
    echo "usage: $0 start DIR PORT | restart DIR | stop DIR" >&2
    exit 2
    ;;
esac
