# Redis for the redis backend: one server on 26379 (redis://) and five independent masters on
# 26380-26384 (redlock://), loopback only, no persistence, daemonized with pidfiles under
# $SQLOCK_RUN_DIR/redis. Destructive tests (stopping nodes) start their own servers with the
# binary named by SQLOCK_TEST_REDIS_SERVER, so these shared ones stay up.
sqlock_redis_ports="26379 26380 26381 26382 26383 26384"

stop_redis() {
  local dir=$SQLOCK_RUN_DIR/redis port pid
  for port in $sqlock_redis_ports; do
    [ -f "$dir/$port.pid" ] || continue
    pid=$(cat "$dir/$port.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$dir/$port.pid"
  done
}

start_redis() {
  local dir=$SQLOCK_RUN_DIR/redis port bin
  bin=$(command -v redis-server || echo /usr/bin/redis-server)
  stop_redis
  mkdir -p "$dir"
  for port in $sqlock_redis_ports; do
    mkdir -p "$dir/$port"
    "$bin" --bind 127.0.0.1 --port "$port" --save '' --appendonly no --daemonize yes \
      --pidfile "$dir/$port.pid" --logfile "$dir/$port.log" --dir "$dir/$port" \
      --maxmemory 64mb --protected-mode yes --maxclients 2000
  done
  for port in $sqlock_redis_ports; do
    wait_for "redis on port $port" 15 redis-cli -h 127.0.0.1 -p "$port" ping
  done
  emit SQLOCK_TEST_REDIS_URL "redis://127.0.0.1:26379"
  emit SQLOCK_TEST_REDLOCK_URL "redlock://127.0.0.1:26380,127.0.0.1:26381,127.0.0.1:26382,127.0.0.1:26383,127.0.0.1:26384"
  emit SQLOCK_TEST_REDIS_SERVER "$bin"
  emit SQLOCK_TEST_REDIS_RUN_DIR "$dir"
}
