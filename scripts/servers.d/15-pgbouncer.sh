# pgbouncer (Debian's package) in front of the test PostgreSQL (10-postgres.sh, started before
# it: servers.d runs in file order), for the tests of connection poolers: ONE process on
# 127.0.0.1:26432 (override with SQLOCK_PGBOUNCER_PORT), its files under
# $SQLOCK_RUN_DIR/pgbouncer, with three database entries on the same PostgreSQL database
# (SQLOCK_PGBOUNCER_DB, default sqlock), one per pool mode:
#   sqlock_tx       pool_mode=transaction  -> SQLOCK_TEST_PGBOUNCER_TX_URL (+ _APP_URL)
#   sqlock_stmt     pool_mode=statement    -> SQLOCK_TEST_PGBOUNCER_STMT_URL
#   sqlock_session  pool_mode=session      -> SQLOCK_TEST_PGBOUNCER_SESSION_URL (+ _APP_URL)
# A transaction or statement pool shares 8 server sessions among its clients; the session pool
# has 80, one per client connection (an advisory-mode client alone keeps 7: pool, lock
# sessions, listener). Server sessions idle for 10 s are closed.
# Clients authenticate with SCRAM against a test-only userlist holding the roles' plain
# passwords (pgbouncer needs them to log in to the server as the client's role). pgbouncer
# refuses to run as root: under root it runs as the `postgres` OS user, like the server.

pgbouncer_dir() { echo "$SQLOCK_RUN_DIR/pgbouncer"; }

stop_pgbouncer() {
  local d pid
  d=$(pgbouncer_dir)
  [ -f "$d/pgbouncer.pid" ] || return 0
  pid=$(cat "$d/pgbouncer.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid" 2>/dev/null || true # immediate shutdown
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  rm -f "$d/pgbouncer.pid"
}

start_pgbouncer() {
  local d port pg_port db bin
  d=$(pgbouncer_dir)
  port=${SQLOCK_PGBOUNCER_PORT:-26432}
  pg_port=${SQLOCK_POSTGRES_PORT:-25432}
  db=${SQLOCK_PGBOUNCER_DB:-sqlock}
  bin=${SQLOCK_PGBOUNCER_BIN:-/usr/sbin/pgbouncer}
  if [ ! -x "$bin" ]; then
    echo "servers.sh: $bin not found (install pgbouncer)" >&2
    return 1
  fi
  stop_pgbouncer
  rm -rf "$d"
  mkdir -p "$d"
  local target="host=127.0.0.1 port=$pg_port dbname=$db"
  cat >"$d/pgbouncer.ini" <<CONF
[databases]
sqlock_tx = $target pool_mode=transaction
sqlock_stmt = $target pool_mode=statement
sqlock_session = $target pool_mode=session pool_size=80

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $d/userlist.txt
pidfile = $d/pgbouncer.pid
logfile = $d/pgbouncer.log
admin_users = postgres
max_client_conn = 300
default_pool_size = 8
min_pool_size = 0
reserve_pool_size = 0
server_idle_timeout = 10
server_lifetime = 600
log_connections = 0
log_disconnections = 0
ignore_startup_parameters = extra_float_digits
CONF
  cat >"$d/userlist.txt" <<USERS
"sqlock_owner" "sqlock_owner"
"sqlock_app" "sqlock_app"
USERS
  chmod 600 "$d/userlist.txt"
  if [ "$(id -u)" -eq 0 ]; then
    chmod a+x "$SQLOCK_RUN_DIR"
    chown -R postgres:postgres "$d"
    runuser -u postgres -- "$bin" -d "$d/pgbouncer.ini" >"$d/start.log" 2>&1
  else
    "$bin" -d "$d/pgbouncer.ini" >"$d/start.log" 2>&1
  fi || {
    cat "$d/start.log" "$d/pgbouncer.log" >&2 2>/dev/null
    return 1
  }
  pgbouncer_up() { bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; }
  wait_for "pgbouncer on port $port" 30 pgbouncer_up
  local base="127.0.0.1:$port"
  emit SQLOCK_TEST_PGBOUNCER_TX_URL "postgresql://sqlock_owner:sqlock_owner@$base/sqlock_tx"
  emit SQLOCK_TEST_PGBOUNCER_TX_APP_URL "postgresql://sqlock_app:sqlock_app@$base/sqlock_tx"
  emit SQLOCK_TEST_PGBOUNCER_STMT_URL "postgresql://sqlock_owner:sqlock_owner@$base/sqlock_stmt"
  emit SQLOCK_TEST_PGBOUNCER_SESSION_URL \
    "postgresql://sqlock_owner:sqlock_owner@$base/sqlock_session"
  emit SQLOCK_TEST_PGBOUNCER_SESSION_APP_URL \
    "postgresql://sqlock_app:sqlock_app@$base/sqlock_session"
}
