# etcd 3.4 (Debian packages etcd-server, etcd-client) for the etcd backend's tests, loopback
# only, small backend quota, data under $SQLOCK_RUN_DIR/etcd:
#   one member on 127.0.0.1:22379 (peer 22380)                       SQLOCK_TEST_ETCD_URL
#   a 3-member cluster on 127.0.0.1:22571-22573 (peers 22581-22583)   SQLOCK_TEST_ETCD_CLUSTER_URL
#   $SQLOCK_RUN_DIR/etcd/ctl.sh {stop|start|leader} [N]               SQLOCK_TEST_ETCD_CLUSTER_CTL
# ctl.sh lets a test stop and restart cluster member N (1..3) and ask which member leads.
# The ports are below the kernel's ephemeral range, so no client socket can take them.

etcd_dir() { echo "$SQLOCK_RUN_DIR/etcd"; }

# etcd_run DIR NAME CLIENT_PORT PEER_PORT INITIAL_CLUSTER: starts one member in the background.
etcd_run() {
  local d=$1 name=$2 cport=$3 pport=$4 cluster=$5
  mkdir -p "$d"
  nohup etcd --name "$name" --data-dir "$d/data" \
    --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
    --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
    --initial-cluster "$cluster" --initial-cluster-state "${ETCD_STATE:-new}" \
    --initial-cluster-token sqlock-test --quota-backend-bytes 268435456 \
    --logger zap --log-outputs "$d/etcd.log" >/dev/null 2>&1 &
  echo $! >"$d/pid"
}

etcd_stop_dir() {
  local d=$1 pid
  [ -f "$d/pid" ] || return 0
  pid=$(cat "$d/pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -CONT "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$d/pid"
}

etcd_healthy() { ETCDCTL_API=3 etcdctl --endpoints="$1" --command-timeout=2s endpoint health; }

stop_etcd() {
  local d
  d=$(etcd_dir)
  for m in single m1 m2 m3; do etcd_stop_dir "$d/$m"; done
}

start_etcd() {
  local d cluster
  d=$(etcd_dir)
  if ! command -v etcd >/dev/null; then
    echo "servers.sh: etcd not found (install etcd-server)" >&2
    return 1
  fi
  stop_etcd
  rm -rf "$d"
  mkdir -p "$d"
  etcd_run "$d/single" single 22379 22380 "single=http://127.0.0.1:22380"
  cluster="m1=http://127.0.0.1:22581,m2=http://127.0.0.1:22582,m3=http://127.0.0.1:22583"
  for n in 1 2 3; do etcd_run "$d/m$n" "m$n" "2257$n" "2258$n" "$cluster"; done
  wait_for "etcd on 22379" 30 etcd_healthy 127.0.0.1:22379
  wait_for "etcd cluster" 30 etcd_healthy 127.0.0.1:22571,127.0.0.1:22572,127.0.0.1:22573
  cat >"$d/ctl.sh" <<CTL
#!/usr/bin/env bash
# Stops, starts or finds the leader of a member of the test etcd cluster (see 50-etcd.sh).
set -euo pipefail
d=$d
case "\$1" in
  stop) kill "\$(cat "\$d/m\$2/pid")"; for _ in \$(seq 1 50); do kill -0 "\$(cat "\$d/m\$2/pid")" 2>/dev/null || exit 0; sleep 0.1; done ;;
  start)
    nohup etcd --name "m\$2" --data-dir "\$d/m\$2/data" \\
      --listen-client-urls "http://127.0.0.1:2257\$2" --advertise-client-urls "http://127.0.0.1:2257\$2" \\
      --listen-peer-urls "http://127.0.0.1:2258\$2" --initial-advertise-peer-urls "http://127.0.0.1:2258\$2" \\
      --initial-cluster "$cluster" --initial-cluster-state existing --initial-cluster-token sqlock-test \\
      --logger zap --log-outputs "\$d/m\$2/etcd.log" >/dev/null 2>&1 &
    echo \$! >"\$d/m\$2/pid"
    for _ in \$(seq 1 100); do
      ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:2257\$2 --command-timeout=1s endpoint health >/dev/null 2>&1 && exit 0
      sleep 0.2
    done
    exit 1 ;;
  leader)
    for n in 1 2 3; do
      ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:2257\$n --command-timeout=1s endpoint status -w json 2>/dev/null |
        python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["Status"]; sys.exit(0 if s["leader"]==s["header"]["member_id"] else 1)' && { echo \$n; exit 0; }
    done
    exit 1 ;;
  *) echo "usage: ctl.sh stop|start|leader [N]" >&2; exit 64 ;;
esac
CTL
  chmod +x "$d/ctl.sh"
  emit SQLOCK_TEST_ETCD_URL "etcd://127.0.0.1:22379/sqlock-test"
  emit SQLOCK_TEST_ETCD_CLUSTER_URL "etcd://127.0.0.1:22571,127.0.0.1:22572,127.0.0.1:22573/sqlock-test"
  emit SQLOCK_TEST_ETCD_CLUSTER_CTL "$d/ctl.sh"
}
