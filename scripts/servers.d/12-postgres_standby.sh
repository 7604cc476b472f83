# A hot standby of the test PostgreSQL (10-postgres.sh, started before it), for the tests of
# read-only servers and `sqlock doctor`: a streaming replica made with pg_basebackup over the
# primary's socket (its default pg_hba lets the local superuser replicate), under
# $SQLOCK_RUN_DIR/postgres_standby on 127.0.0.1:25433 (override with
# SQLOCK_POSTGRES_STANDBY_PORT), tiny memory settings. A hot standby must allow at least the
# primary's max_connections, so it keeps 300. It replays the primary's roles and databases:
#   -> SQLOCK_TEST_POSTGRES_STANDBY_URL (role sqlock_owner, database sqlock)

postgres_standby_dir() { echo "$SQLOCK_RUN_DIR/postgres_standby"; }

stop_postgres_standby() {
  local d
  d=$(postgres_standby_dir)
  [ -f "$d/data/postmaster.pid" ] || return 0
  postgres_as "$(postgres_bin)/pg_ctl" -D "$d/data" -m immediate -w -t 30 stop >/dev/null 2>&1 ||
    true
}

start_postgres_standby() {
  local d bin port primary_port
  d=$(postgres_standby_dir)
  bin=$(postgres_bin)
  port=${SQLOCK_POSTGRES_STANDBY_PORT:-25433}
  primary_port=${SQLOCK_POSTGRES_PORT:-25432}
  stop_postgres_standby
  rm -rf "$d"
  mkdir -p "$d"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$d"
  chmod 700 "$d"
  # -R writes standby.signal and primary_conninfo; -X stream copies the WAL written meanwhile.
  postgres_as "$bin/pg_basebackup" -h "$(postgres_dir)" -p "$primary_port" -U postgres \
    -D "$d/data" -R -X stream -c fast >"$d/basebackup.log" 2>&1 || {
    cat "$d/basebackup.log" >&2
    return 1
  }
  cat >>"$d/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$d'
shared_buffers = 16MB
work_mem = 1MB
maintenance_work_mem = 8MB
hot_standby = on
hot_standby_feedback = off
CONF
  postgres_as "$bin/pg_ctl" -D "$d/data" -l "$d/server.log" -w -t 60 start >/dev/null || {
    cat "$d/server.log" >&2
    return 1
  }
  wait_for "postgres standby on port $port" 30 "$bin/pg_isready" -h 127.0.0.1 -p "$port"
  emit SQLOCK_TEST_POSTGRES_STANDBY_URL \
    "postgresql://sqlock_owner:sqlock_owner@127.0.0.1:$port/sqlock"
}
