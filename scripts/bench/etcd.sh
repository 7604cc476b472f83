#!/usr/bin/env bash
# Benchmarks of the etcd backend beside its ceilings, in one run, on the test member
# ($SQLOCK_TEST_ETCD_URL):
#  1. `sqlock bench` (1 thread; 2 and 4 threads contending for one lock: handoff), over gRPC
#     (the default wire) and over the JSON gateway (transport=json)
#  2. the handoff's raw ceiling: delete -> watch event of a bare client (gateway; gateway with
#     a concurrent put, as in a contended handoff; gRPC), tests/benchmarks/etcd_handoff_ceiling.py
#  3. python3-etcd3 over gRPC: the raw operations of one try_lock/unlock (lease grant, txn,
#     lease revoke) and its Lock recipe (the peer client)
#  4. whole commands: N x `etcdctl lock NAME true` vs N x `sqlock run NAME -- true`
#  5. loss right after taking: a key deleted as soon as `sqlock hold` has its fence, until it
#     exits 70 (tests/benchmarks/etcd_loss_probe.py)
#  6. one thread locking 100 names in a row with release=wait (the default) and release=async,
#     interleaved over [rounds] rounds of 3 s (the machine's load moves between them)
# Usage: scripts/bench/etcd.sh [build-dir] [rounds]   (prints Markdown-ready raw output)
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
sqlock=$build/bin/sqlock
url=${SQLOCK_TEST_ETCD_URL:?start the test servers (scripts/servers.sh start etcd)}
hostport=${url#etcd://}
hostport=${hostport%%/*}
py=/usr/bin/python3
echo "## etcd: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
sep='?'
[[ $url == *\?* ]] && sep='&'
for wire in grpc json; do
  for args in "--threads 1" "--threads 2 --contended" "--threads 4 --contended"; do
    echo "\$ sqlock bench --url \$ETCD${sep}transport=$wire $args --duration 5s --json"
    # shellcheck disable=SC2086
    "$sqlock" bench --url "$url${sep}transport=$wire" $args --duration 5s --json 2>/dev/null
  done
done
for what in gateway busy grpc; do
  echo "\$ etcd_handoff_ceiling.py $what 500"
  $py tests/benchmarks/etcd_handoff_ceiling.py "$hostport" "$what" 500
done
for what in raw lock; do
  echo "\$ etcd_peer_bench.py $what 5"
  $py tests/benchmarks/etcd_peer_bench.py "$hostport" "$what" 5
done
n=50
export ETCDCTL_API=3
etcdctl --endpoints="$hostport" lock bench-cmd-warmup true >/dev/null
start=$(date +%s.%N)
for _ in $(seq $n); do etcdctl --endpoints="$hostport" lock bench-cmd true >/dev/null; done
etcdctl_s=$(echo "$(date +%s.%N) - $start" | bc)
"$sqlock" run --url "$url" warmup -- true
start=$(date +%s.%N)
for _ in $(seq $n); do "$sqlock" run --url "$url" bench-cmd -- true; done
sqlock_s=$(echo "$(date +%s.%N) - $start" | bc)
echo "$n x etcdctl lock NAME true:        ${etcdctl_s}s  ($(echo "scale=2; $etcdctl_s * 1000 / $n" | bc) ms each)"
echo "$n x sqlock run NAME -- true:       ${sqlock_s}s  ($(echo "scale=2; $sqlock_s * 1000 / $n" | bc) ms each)"
echo "\$ etcd_loss_probe.py 40"
$py tests/benchmarks/etcd_loss_probe.py "$sqlock" "$url" 40
for ((round = 1; round <= rounds; round++)); do
  echo "## 100 names in a row, round $round, load $(cut -d' ' -f1-3 /proc/loadavg)"
  for release in wait async; do
    echo "\$ sqlock bench --url \$ETCD${sep}release=$release --locks 100 --duration 3s --json"
    "$sqlock" bench --url "$url${sep}release=$release" --locks 100 --duration 3s --json 2>/dev/null
  done
done
