# Three PostgreSQL 15 nodes managed by Patroni (Debian patroni), synchronous mode, with a
# private one-member etcd as the DCS (127.0.0.1:22601, peer 22602; not the etcd backend's):
# PostgreSQL on 127.0.0.1:25441..25443, Patroni's REST API on 28008..28010, data under
# $SQLOCK_RUN_DIR/patroni. The first node bootstraps the cluster; the others clone it.
#   SQLOCK_TEST_PATRONI_URL   all three hosts, target_session_attrs=read-write (role
#                             sqlock_owner, database sqlock)
#   SQLOCK_TEST_PATRONI_REST_URL  Patroni's REST API of the second node (sqlock doctor --patroni;
#                             any member's API describes the whole cluster)
#   SQLOCK_TEST_PATRONI_DIR   the run directory (nodeN/patroni.pid, nodeN/patroni.yml), for
#                             the failover test, which stops the leader's Patroni and starts
#                             it again

patroni_dir() { echo "$SQLOCK_RUN_DIR/patroni"; }

stop_patroni() {
  local d f pid
  d=$(patroni_dir)
  for f in "$d"/node3/patroni.pid "$d"/node2/patroni.pid "$d"/node1/patroni.pid "$d"/etcd/pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
  # A postgres a killed Patroni left behind.
  for f in "$d"/node*/data/postmaster.pid; do
    [ -f "$f" ] || continue
    pid=$(head -1 "$f")
    kill -9 "$pid" 2>/dev/null || true
  done
}

# patroni_config N: node N's patroni.yml.
patroni_config() {
  local n=$1 d nd
  d=$(patroni_dir)
  nd="$d/node$n"
  mkdir -p "$nd"
  cat >"$nd/patroni.yml" <<YML
scope: sqlock_patroni
namespace: /sqlock-test/
name: node$n
restapi:
  listen: 127.0.0.1:$((28007 + n))
  connect_address: 127.0.0.1:$((28007 + n))
etcd3:
  host: 127.0.0.1:22601
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        shared_buffers: 16MB
        max_connections: 100
        wal_keep_size: 64MB
        max_wal_senders: 10
        max_replication_slots: 10
        wal_log_hints: 'on'
  initdb:
  - encoding: UTF8
  - auth-local: trust
  pg_hba:
  - local all all trust
  - host replication replicator 127.0.0.1/32 trust
  - host all all 127.0.0.1/32 scram-sha-256
postgresql:
  listen: 127.0.0.1:$((25440 + n))
  connect_address: 127.0.0.1:$((25440 + n))
  data_dir: $nd/data
  bin_dir: $(postgres_bin)
  pgpass: $nd/pgpass
  authentication:
    replication:
      username: replicator
      password: replicator-pw
    superuser:
      username: postgres
      password: postgres-pw
  parameters:
    unix_socket_directories: '$nd'
log:
  dir: $nd
YML
  chown -R postgres:postgres "$nd" 2>/dev/null || true
}

# patroni_start N: starts node N's Patroni (as user postgres when we are root).
patroni_start() {
  local nd
  nd="$(patroni_dir)/node$1"
  postgres_as sh -c "nohup patroni '$nd/patroni.yml' >'$nd/patroni.out' 2>&1 & echo \$! >'$nd/patroni.pid'"
}

start_patroni() {
  local d n
  d=$(patroni_dir)
  stop_patroni
  rm -rf "$d"
  mkdir -p "$d/etcd"
  etcd_run "$d/etcd" patroni-dcs 22601 22602 "patroni-dcs=http://127.0.0.1:22602"
  wait_for "Patroni's etcd" 30 etcd_healthy "http://127.0.0.1:22601" || return 1
  for n in 1 2 3; do patroni_config "$n"; done
  patroni_start 1
  wait_for "Patroni leader" 90 sh -c "curl -sf -m 2 http://127.0.0.1:28008/leader" || {
    tail -30 "$d/node1/patroni.out" >&2
    return 1
  }
  postgres_as psql -X -q -h "$d/node1" -p 25441 -U postgres -d postgres <<'SQL'
CREATE ROLE sqlock_owner LOGIN PASSWORD 'sqlock_owner' CREATEROLE;
CREATE ROLE sqlock_execute NOLOGIN;
GRANT sqlock_execute TO sqlock_owner WITH ADMIN OPTION;
CREATE DATABASE sqlock OWNER sqlock_owner;
SQL
  patroni_start 2
  patroni_start 3
  for n in 2 3; do
    wait_for "Patroni replica $n" 120 sh -c "curl -sf -m 2 http://127.0.0.1:$((28007 + n))/replica" || {
      tail -30 "$d/node$n/patroni.out" >&2
      return 1
    }
  done
  emit SQLOCK_TEST_PATRONI_URL \
    "postgresql://sqlock_owner:sqlock_owner@127.0.0.1:25441,127.0.0.1:25442,127.0.0.1:25443/sqlock?target_session_attrs=read-write"
  emit SQLOCK_TEST_PATRONI_DIR "$d"
  emit SQLOCK_TEST_PATRONI_REST_URL "http://127.0.0.1:28009"
}
