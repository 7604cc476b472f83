#!/bin/bash
# A PRIVATE MariaDB for the read-only tests (CTest fixture): scripts/servers.sh's mysql under
# DIR on the first free port from PORT, never the shared server (read_only is global).
#   read_only_server.sh start DIR PORT    writes DIR/url (sqlock_admin, database sqlock)
#   read_only_server.sh read_only DIR 1|0 SET GLOBAL read_only as root (over the socket)
#   read_only_server.sh stop DIR          stops it and removes DIR
set -euo pipefail

cmd=$1
export SQLOCK_RUN_DIR=$2
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../scripts/servers.d/20-mysql.sh
source "$repo/scripts/servers.d/20-mysql.sh" # mysql_dir

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

case "$cmd" in
  start)
    "$repo/scripts/servers.sh" stop mysql >/dev/null 2>&1 || true
    rm -rf "$SQLOCK_RUN_DIR"
    mkdir -p "$SQLOCK_RUN_DIR"
    if ! command -v mariadb-install-db >/dev/null 2>&1; then
      echo "read_only_server.sh: no mariadb-install-db: the read-only tests will skip" >&2
      exit 0
    fi
    port=$3
    for ((i = 0; i < 20; i++)); do
      port_free "$port" && break
      port=$((port + 1))
    done
    SQLOCK_MYSQL_PORT=$port "$repo/scripts/servers.sh" start mysql
    # shellcheck source=/dev/null
    source "$SQLOCK_RUN_DIR/env.sh"
    echo "$SQLOCK_TEST_MYSQL_URL" >"$SQLOCK_RUN_DIR/url"
    ;;
  read_only)
    mariadb --no-defaults --protocol=socket --socket="$(mysql_dir)/mysqld.sock" -uroot \
      -e "SET GLOBAL read_only = $3"
    ;;
  stop)
    "$repo/scripts/servers.sh" stop mysql >/dev/null 2>&1 || true
    rm -rf "$SQLOCK_RUN_DIR"
    ;;
  *)
    echo "usage: $0 start DIR PORT | read_only DIR 1|0 | stop DIR" >&2
    exit 2
    ;;
esac
