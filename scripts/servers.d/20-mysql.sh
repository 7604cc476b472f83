# MariaDB 10.11 for the mysql backend's tests: a private data directory under
# $SQLOCK_RUN_DIR/mysql, TCP on 127.0.0.1:23306 (override with SQLOCK_MYSQL_PORT), a socket in
# the run directory, small buffers, real users (no --skip-grant-tables):
#   sqlock_admin  owns the schema `sqlock` (runs `sqlock migrate`)          SQLOCK_TEST_MYSQL_URL
#   sqlock_exec   EXECUTE on `sqlock` only (calls the DEFINER procedures)    SQLOCK_TEST_MYSQL_EXEC_URL
#   sqlock_killer PROCESS + CONNECTION ADMIN, no sqlock access (KILL in tests) SQLOCK_TEST_MYSQL_ADMIN_URL
#   sqlock_dba    CREATE USER, and everything on databases named sqlock_t_* (tests that need a
#                 database or a user of their own create and drop them)     SQLOCK_TEST_MYSQL_DBA_URL
# The bare server (no sqlock schema) is in `sqlock_empty` for the missing-schema test.

mysql_dir() { echo "$SQLOCK_RUN_DIR/mysql"; }

mysql_server_bin() {
  local b
  for b in mariadbd mysqld; do
    if command -v "$b" >/dev/null 2>&1; then command -v "$b"; return 0; fi
    if [ -x "/usr/sbin/$b" ]; then echo "/usr/sbin/$b"; return 0; fi
  done
  echo "servers.sh: mariadbd not found (install mariadb-server)" >&2
  return 1
}

stop_mysql() {
  local d
  d=$(mysql_dir)
  stop_pid_file "$d/mysqld.pid"
}

start_mysql() {
  local d port bin sock client
  d=$(mysql_dir)
  port=${SQLOCK_MYSQL_PORT:-23306}
  stop_mysql
  rm -rf "$d"
  mkdir -p "$d/data" "$d/tmp"
  bin=$(mysql_server_bin)
  sock="$d/mysqld.sock"
  cat >"$d/my.cnf" <<CNF
[mariadbd]
datadir=$d/data
tmpdir=$d/tmp
socket=$sock
pid-file=$d/mysqld.pid
log-error=$d/error.log
bind-address=127.0.0.1
port=$port
user=root
skip-name-resolve
character-set-server=utf8mb4
collation-server=utf8mb4_bin
innodb_buffer_pool_size=32M
innodb_log_file_size=16M
innodb_log_buffer_size=4M
innodb_flush_log_at_trx_commit=2
innodb_lock_wait_timeout=10
key_buffer_size=1M
max_connections=300
thread_cache_size=16
table_open_cache=256
# performance_schema with only the metadata-lock instrument: list() of compat=distributedlock
# and compat=raw shows everyone's GET_LOCK locks from performance_schema.metadata_locks. Small
# fixed sizes keep its memory to a few MB.
performance_schema=ON
performance-schema-instrument='%=OFF'
performance-schema-instrument='wait/lock/metadata/sql/mdl=ON'
performance-schema-consumer-events-statements-current=OFF
performance-schema-consumer-events-transactions-current=OFF
performance-schema-consumer-thread-instrumentation=OFF
performance_schema_max_metadata_locks=4096
performance_schema_max_thread_instances=400
performance_schema_digests_size=0
performance_schema_max_digest_length=0
performance_schema_max_sql_text_length=0
performance_schema_events_statements_history_long_size=0
performance_schema_events_statements_history_size=0
performance_schema_events_transactions_history_long_size=0
performance_schema_events_transactions_history_size=0
performance_schema_events_waits_history_long_size=0
performance_schema_events_waits_history_size=0
performance_schema_events_stages_history_long_size=0
performance_schema_events_stages_history_size=0
skip-log-bin
event_scheduler=OFF
CNF
  mariadb-install-db --defaults-file="$d/my.cnf" --auth-root-authentication-method=socket \
    --skip-test-db >"$d/install.log" 2>&1 || {
    cat "$d/install.log" >&2
    return 1
  }
  "$bin" --defaults-file="$d/my.cnf" >"$d/stdout.log" 2>&1 &
  client=(mariadb --no-defaults --protocol=socket --socket="$sock" -uroot)
  wait_for "MariaDB on 127.0.0.1:$port" 60 "${client[@]}" -e "SELECT 1" || {
    tail -30 "$d/error.log" >&2
    return 1
  }
  "${client[@]}" <<SQL
CREATE DATABASE IF NOT EXISTS sqlock CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE DATABASE IF NOT EXISTS sqlock_empty CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS 'sqlock_admin'@'127.0.0.1' IDENTIFIED BY 'admin-pw';
CREATE USER IF NOT EXISTS 'sqlock_admin'@'localhost' IDENTIFIED BY 'admin-pw';
GRANT ALL PRIVILEGES ON sqlock.* TO 'sqlock_admin'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON sqlock.* TO 'sqlock_admin'@'localhost' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON sqlock_empty.* TO 'sqlock_admin'@'127.0.0.1';
GRANT ALL PRIVILEGES ON sqlock_empty.* TO 'sqlock_admin'@'localhost';
GRANT SELECT ON performance_schema.metadata_locks TO 'sqlock_admin'@'127.0.0.1';
GRANT SELECT ON performance_schema.threads TO 'sqlock_admin'@'127.0.0.1';
CREATE USER IF NOT EXISTS 'sqlock_exec'@'127.0.0.1' IDENTIFIED BY 'exec-pw';
CREATE USER IF NOT EXISTS 'sqlock_exec'@'localhost' IDENTIFIED BY 'exec-pw';
GRANT EXECUTE ON sqlock.* TO 'sqlock_exec'@'127.0.0.1';
GRANT EXECUTE ON sqlock.* TO 'sqlock_exec'@'localhost';
CREATE USER IF NOT EXISTS 'sqlock_killer'@'127.0.0.1' IDENTIFIED BY 'killer-pw';
GRANT PROCESS, CONNECTION ADMIN ON *.* TO 'sqlock_killer'@'127.0.0.1';
GRANT SELECT ON sqlock_empty.* TO 'sqlock_killer'@'127.0.0.1';
CREATE USER IF NOT EXISTS 'sqlock_dba'@'127.0.0.1' IDENTIFIED BY 'dba-pw';
GRANT CREATE USER ON *.* TO 'sqlock_dba'@'127.0.0.1';
GRANT ALL PRIVILEGES ON \`sqlock\\_t\\_%\`.* TO 'sqlock_dba'@'127.0.0.1' WITH GRANT OPTION;
GRANT SELECT ON sqlock_empty.* TO 'sqlock_dba'@'127.0.0.1';
SQL
  emit SQLOCK_TEST_MYSQL_URL "mysql://sqlock_admin:admin-pw@127.0.0.1:$port/sqlock"
  emit SQLOCK_TEST_MYSQL_EXEC_URL "mysql://sqlock_exec:exec-pw@127.0.0.1:$port/sqlock"
  emit SQLOCK_TEST_MYSQL_ADMIN_URL "mysql://sqlock_killer:killer-pw@127.0.0.1:$port/sqlock_empty"
  emit SQLOCK_TEST_MYSQL_EMPTY_URL "mysql://sqlock_admin:admin-pw@127.0.0.1:$port/sqlock_empty"
  emit SQLOCK_TEST_MYSQL_DBA_URL "mysql://sqlock_dba:dba-pw@127.0.0.1:$port/sqlock_empty"
  emit SQLOCK_TEST_MYSQL_SOCKET "$sock"
}
