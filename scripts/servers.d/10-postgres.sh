# PostgreSQL 15 for the postgres backend's tests: a private cluster under $SQLOCK_RUN_DIR/postgres
# on 127.0.0.1:25432 (override with SQLOCK_POSTGRES_PORT), its socket in the run directory, small
# memory settings, fsync off (the data is disposable), password (SCRAM) authentication on TCP.
# initdb/pg_ctl refuse to run as root, so under root (CI) they run as the `postgres` OS user
# created by the Debian package. Database `sqlock`, roles:
#   sqlock_owner  owns the database and the sqlock schema; runs `sqlock migrate`; may create the
#                 sqlock_execute group role and terminate other sessions (pg_signal_backend)
#                                                                  -> SQLOCK_TEST_POSTGRES_URL
#   sqlock_app    LOGIN, member of sqlock_execute only: EXECUTE on the functions, no table access
#                                                                  -> SQLOCK_TEST_POSTGRES_APP_URL
# The tests (and `sqlock migrate`) create the schema; the server starts without it.

postgres_dir() { echo "$SQLOCK_RUN_DIR/postgres"; }
postgres_bin() { echo "${SQLOCK_POSTGRES_BIN:-/usr/lib/postgresql/15/bin}"; }

# Runs a command as the cluster's OS user: `postgres` when we are root, else ourselves.
postgres_as() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

stop_postgres() {
  local d
  d=$(postgres_dir)
  [ -f "$d/data/postmaster.pid" ] || return 0
  postgres_as "$(postgres_bin)/pg_ctl" -D "$d/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  # pg_ctl failed (data dir gone, wrong user): kill the postmaster by its recorded pid.
  if [ -f "$d/data/postmaster.pid" ]; then
    local pid
    pid=$(head -1 "$d/data/postmaster.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -QUIT "$pid" 2>/dev/null || true
      sleep 1
    fi
  fi
}

start_postgres() {
  local d bin port sql
  d=$(postgres_dir)
  bin=$(postgres_bin)
  port=${SQLOCK_POSTGRES_PORT:-25432}
  if [ ! -x "$bin/initdb" ]; then
    echo "servers.sh: $bin/initdb not found (install postgresql-15)" >&2
    return 1
  fi
  stop_postgres
  rm -rf "$d"
  mkdir -p "$d"
  if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
      echo "servers.sh: OS user postgres is missing (install postgresql-15)" >&2
      return 1
    fi
    chmod a+x "$SQLOCK_RUN_DIR"
    chown postgres:postgres "$d"
  fi
  postgres_as "$bin/initdb" -D "$d/data" -U postgres -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >"$d/initdb.log" 2>&1 || {
    cat "$d/initdb.log" >&2
    return 1
  }
  cat >>"$d/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$d'
max_connections = 300
shared_buffers = 32MB
work_mem = 2MB
maintenance_work_mem = 16MB
fsync = off
synchronous_commit = off
full_page_writes = off
max_wal_size = 256MB
log_min_messages = warning
log_min_error_statement = panic
logging_collector = off
CONF
  postgres_as "$bin/pg_ctl" -D "$d/data" -l "$d/server.log" -w -t 60 start >/dev/null || {
    cat "$d/server.log" >&2
    return 1
  }
  wait_for "postgres on port $port" 30 "$bin/pg_isready" -h 127.0.0.1 -p "$port"
  sql="
    CREATE ROLE sqlock_owner LOGIN PASSWORD 'sqlock_owner' CREATEROLE;
    GRANT pg_signal_backend TO sqlock_owner;
    CREATE ROLE sqlock_execute NOLOGIN;
    GRANT sqlock_execute TO sqlock_owner WITH ADMIN OPTION;
    CREATE ROLE sqlock_app LOGIN PASSWORD 'sqlock_app' IN ROLE sqlock_execute;
    CREATE DATABASE sqlock OWNER sqlock_owner;"
  # Fed on stdin (not -c) so each statement runs on its own: CREATE DATABASE refuses a
  # transaction block.
  echo "$sql" | postgres_as "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$d" -p "$port" -U postgres \
    -d postgres >/dev/null
  emit SQLOCK_TEST_POSTGRES_URL "postgresql://sqlock_owner:sqlock_owner@127.0.0.1:$port/sqlock"
  emit SQLOCK_TEST_POSTGRES_APP_URL "postgresql://sqlock_app:sqlock_app@127.0.0.1:$port/sqlock"
}
