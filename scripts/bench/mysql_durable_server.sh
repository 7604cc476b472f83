#!/usr/bin/env bash
# Starts (or stops) a private, durable MariaDB for benchmarks — never the shared test server:
# innodb_flush_log_at_trx_commit=1 (an fsync per commit), innodb_doublewrite on, no binary log;
# with BINLOG=1 a binary log too (sync_binlog=1, binlog_format=MIXED) and BINLOG ADMIN for the
# migrating user (docs/backends/mysql.md, "Binary log"). Data under $DIR (default
# /tmp/sqlock-bench-mysql), TCP 127.0.0.1:$PORT (default 23406).
#   scripts/bench/mysql_durable_server.sh start   -> prints the admin URL (user sqlock_admin)
#   scripts/bench/mysql_durable_server.sh stop
set -euo pipefail
dir=${DIR:-/tmp/sqlock-bench-mysql}
port=${PORT:-23406}
stop() {
  [ -f "$dir/mysqld.pid" ] || return 0
  local pid
  pid=$(cat "$dir/mysqld.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  rm -f "$dir/mysqld.pid"
}
case ${1:-start} in
  stop) stop; exit 0 ;;
  start) ;;
  *) echo "usage: $0 start|stop" >&2; exit 64 ;;
esac
stop
rm -rf "$dir"
mkdir -p "$dir/data" "$dir/tmp"
cat >"$dir/my.cnf" <<CNF
[mariadbd]
datadir=$dir/data
tmpdir=$dir/tmp
socket=$dir/mysqld.sock
pid-file=$dir/mysqld.pid
log-error=$dir/error.log
bind-address=127.0.0.1
port=$port
user=root
skip-name-resolve
character-set-server=utf8mb4
collation-server=utf8mb4_bin
innodb_buffer_pool_size=64M
innodb_flush_log_at_trx_commit=1
innodb_flush_method=fsync
innodb_doublewrite=1
max_connections=300
performance_schema=ON
CNF
if [ "${BINLOG:-0}" = 1 ]; then
  # log_bin_trust_function_creators: sqlock's stored functions (since version 1) need it or SUPER
  printf 'log-bin=binlog\nsync_binlog=1\nbinlog_format=MIXED\nlog_bin_trust_function_creators=1\n' >>"$dir/my.cnf"
else
  echo skip-log-bin >>"$dir/my.cnf"
fi
mariadb-install-db --defaults-file="$dir/my.cnf" --auth-root-authentication-method=socket \
  --skip-test-db >"$dir/install.log" 2>&1
bin=$(command -v mariadbd || echo /usr/sbin/mariadbd)
setsid "$bin" --defaults-file="$dir/my.cnf" >"$dir/stdout.log" 2>&1 < /dev/null &
client=(mariadb --no-defaults --protocol=socket --socket="$dir/mysqld.sock" -uroot)
for _ in $(seq 1 300); do
  "${client[@]}" -e "SELECT 1" >/dev/null 2>&1 && break
  sleep 0.2
done
"${client[@]}" <<SQL
CREATE DATABASE IF NOT EXISTS sqlock CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS 'sqlock_admin'@'127.0.0.1' IDENTIFIED BY 'admin-pw';
GRANT ALL PRIVILEGES ON sqlock.* TO 'sqlock_admin'@'127.0.0.1' WITH GRANT OPTION;
GRANT PROCESS, CONNECTION ADMIN ON *.* TO 'sqlock_admin'@'127.0.0.1';
SQL
[ "${BINLOG:-0}" = 1 ] && "${client[@]}" -e "GRANT BINLOG ADMIN ON *.* TO 'sqlock_admin'@'127.0.0.1'"
echo "mysql://sqlock_admin:admin-pw@127.0.0.1:$port/sqlock"
