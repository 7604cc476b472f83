# A three-node MariaDB Galera cluster (Debian galera-4) on loopback for the mysql backend's
# cluster tests: data directories under $SQLOCK_RUN_DIR/galera/node{1,2,3}, SQL on
# 127.0.0.1:23316..23318 (override the first with SQLOCK_GALERA_PORT), group communication on
# 24567..24569, IST on 24577..24579, rsync SST on 24587..24589; small buffers, failure detection
# in a few seconds (so a killed node leaves the cluster quickly). Node 1 bootstraps the cluster,
# the others join it by SST; the users, made on node 1, replicate:
#   sqlock_admin  owns the schema `sqlock`  SQLOCK_TEST_GALERA_URL (node 1),
#                 SQLOCK_TEST_GALERA_URLS (the three nodes' URLs, space-separated)
#   root (socket) for tests that kill a node: SQLOCK_TEST_GALERA_PIDS (pid files, space-separated)

galera_dir() { echo "$SQLOCK_RUN_DIR/galera"; }

galera_provider() {
  local p
  for p in /usr/lib/galera/libgalera_smm.so /usr/lib/libgalera_smm.so; do
    if [ -e "$p" ]; then echo "$p"; return 0; fi
  done
  echo "servers.sh: libgalera_smm.so not found (install galera-4)" >&2
  return 1
}

stop_galera() {
  local d n
  d=$(galera_dir)
  for n in 3 2 1; do stop_pid_file "$d/node$n/mysqld.pid"; done
}

# galera_node_config N: writes node N's my.cnf (the cluster address names all three nodes).
galera_node_config() {
  local n=$1 d base nd provider
  d=$(galera_dir)
  base=${SQLOCK_GALERA_PORT:-23316}
  nd="$d/node$n"
  provider=$(galera_provider)
  mkdir -p "$nd/data" "$nd/tmp"
  cat >"$nd/my.cnf" <<CNF
[mariadbd]
datadir=$nd/data
tmpdir=$nd/tmp
socket=$nd/mysqld.sock
pid-file=$nd/mysqld.pid
log-error=$nd/error.log
bind-address=127.0.0.1
port=$((base + n - 1))
user=mysql
skip-name-resolve
character-set-server=utf8mb4
collation-server=utf8mb4_bin
innodb_buffer_pool_size=16M
innodb_log_file_size=8M
innodb_log_buffer_size=2M
innodb_flush_log_at_trx_commit=2
innodb_lock_wait_timeout=10
innodb_autoinc_lock_mode=2
key_buffer_size=1M
max_connections=200
thread_cache_size=8
table_open_cache=128
performance_schema=OFF
binlog_format=ROW
default_storage_engine=InnoDB
event_scheduler=OFF
wsrep_on=ON
wsrep_provider=$provider
wsrep_cluster_name=sqlock_galera
wsrep_cluster_address=gcomm://127.0.0.1:24567,127.0.0.1:24568,127.0.0.1:24569
wsrep_node_name=node$n
wsrep_node_address=127.0.0.1:$((24566 + n))
wsrep_node_incoming_address=127.0.0.1:$((base + n - 1))
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:$((24586 + n))
wsrep_slave_threads=1
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:$((24566 + n));ist.recv_addr=127.0.0.1:$((24576 + n));gcache.size=16M;evs.keepalive_period=PT0.5S;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT3S;evs.inactive_check_period=PT0.5S;evs.install_timeout=PT3S;pc.wait_prim_timeout=PT10S"
CNF
}

# galera_node_start N [--wsrep-new-cluster]: starts node N in the background.
galera_node_start() {
  local n=$1 nd bin
  shift
  nd="$(galera_dir)/node$n"
  bin=$(mysql_server_bin)
  "$bin" --defaults-file="$nd/my.cnf" "$@" >"$nd/stdout.log" 2>&1 &
}

# galera_synced N PID SECONDS: waits until node N (process PID) reports
# wsrep_local_state_comment = Synced; fails at once when the process is gone.
galera_synced() {
  local nd state
  nd="$(galera_dir)/node$1"
  for _ in $(seq 1 $(($3 * 5))); do
    kill -0 "$2" 2>/dev/null || break
    state=$(mariadb --no-defaults --protocol=socket --socket="$nd/mysqld.sock" -uroot -N \
      -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null || true)
    case "$state" in *Synced*) return 0 ;; esac
    sleep 0.2
  done
  echo "servers.sh: Galera node $1 did not reach Synced within ${3}s (or it stopped)" >&2
  return 1
}

start_galera() {
  local d base n urls pids
  d=$(galera_dir)
  base=${SQLOCK_GALERA_PORT:-23316}
  stop_galera
  rm -rf "$d"
  for n in 1 2 3; do galera_node_config "$n"; done
  # The nodes run as user mysql: a root server's rsync SST daemon would drop to user nobody,
  # which cannot write the joiner's data directory.
  chown -R mysql:mysql "$d"
  # mariadb-install-db runs without wsrep (it makes the system tables alone); then node 1
  # bootstraps the cluster and the joiners copy its data by rsync SST.
  mariadb-install-db --defaults-file="$d/node1/my.cnf" --user=mysql --wsrep-on=OFF \
    --auth-root-authentication-method=socket --skip-test-db >"$d/node1/install.log" 2>&1 || {
    cat "$d/node1/install.log" >&2
    return 1
  }
  galera_node_start 1 --wsrep-new-cluster
  galera_synced 1 $! 60 || {
    tail -30 "$d/node1/error.log" >&2
    return 1
  }
  mariadb --no-defaults --protocol=socket --socket="$d/node1/mysqld.sock" -uroot <<SQL
CREATE DATABASE IF NOT EXISTS sqlock CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS 'sqlock_admin'@'127.0.0.1' IDENTIFIED BY 'admin-pw';
GRANT ALL PRIVILEGES ON sqlock.* TO 'sqlock_admin'@'127.0.0.1' WITH GRANT OPTION;
SQL
  for n in 2 3; do
    galera_node_start "$n"
    galera_synced "$n" $! 90 || {
      tail -30 "$d/node$n/error.log" >&2
      return 1
    }
  done
  urls=""
  pids=""
  for n in 1 2 3; do
    urls+="${urls:+ }mysql://sqlock_admin:admin-pw@127.0.0.1:$((base + n - 1))/sqlock"
    pids+="${pids:+ }$d/node$n/mysqld.pid"
  done
  emit SQLOCK_TEST_GALERA_URL "mysql://sqlock_admin:admin-pw@127.0.0.1:$base/sqlock"
  emit SQLOCK_TEST_GALERA_URLS "$urls"
  emit SQLOCK_TEST_GALERA_PIDS "$pids"
}
