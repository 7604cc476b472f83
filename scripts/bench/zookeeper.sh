#!/usr/bin/env bash
# Benchmarks of the ZooKeeper backend beside kazoo's Lock (python3-kazoo, worker processes), in
# one run, on the test server ($SQLOCK_TEST_ZOOKEEPER_URL): 1 thread; 4 and 2 threads contending
# for one lock; 4 threads on locks of their own; sqlock with the default release=wait and with
# release=async; then one thread locking 100 names in a row (sqlock only). Each line also gives
# the requests the server
# received per lock/unlock pair (`srvr`'s Received counter before and after the run, so the
# server must serve nobody else meanwhile): the one figure that load on the machine does not move.
# Usage: scripts/bench/zookeeper.sh [build-dir] [seconds]   (prints raw output)
set -euo pipefail
build=${1:-build}
seconds=${2:-5}
sqlock=$build/bin/sqlock
url=${SQLOCK_TEST_ZOOKEEPER_URL:?start the test servers (scripts/servers.sh start zookeeper)}
hostport=${url#zookeeper://}
hostport=${hostport%%/*}
py=/usr/bin/python3
kazoo=tests/backends/zookeeper/kazoo_bench.py
# The server's count of requests received so far.
received() {
  timeout 2 bash -c "exec 3<>/dev/tcp/${hostport%:*}/${hostport#*:} && printf srvr >&3 && cat <&3" |
    sed -n 's/^Received: //p'
}
# One JSON result line with "requests_per_pair" added; $1 = the count before, $2 = after.
per_pair() {
  $py -c 'import json, sys
d = json.loads(sys.stdin.read()); d["requests_per_pair"] = round((int(sys.argv[2]) - int(sys.argv[1]) - 1) / max(1, d["pairs"]), 2)
print(json.dumps(d))' "$1" "$2"
}
echo "## zookeeper: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
sep='?'
[[ $url == *\?* ]] && sep='&'
# One `sqlock bench` run: $1 = URL options ("" or "release=async"), the rest = bench arguments.
sqlock_run() {
  local opts=$1
  shift
  echo "\$ sqlock bench --url \$ZK${opts:+$sep$opts} --duration ${seconds}s $* --json"
  r0=$(received)
  out=$("$sqlock" bench --url "$url${opts:+$sep$opts}" --duration "${seconds}s" "$@" --json 2>/dev/null)
  per_pair "$r0" "$(received)" <<<"$out"
}
for args in "" "--threads 4 --contended" "--threads 2 --contended" "--threads 4"; do
  # shellcheck disable=SC2086
  sqlock_run "" $args
  # shellcheck disable=SC2086
  sqlock_run release=async $args
  echo "\$ kazoo_bench.py --duration $seconds $args --json"
  r0=$(received)
  # shellcheck disable=SC2086
  out=$($py $kazoo --hosts "$hostport" --duration "$seconds" $args --json)
  per_pair "$r0" "$(received)" <<<"$out"
done
sqlock_run "" --locks 100
sqlock_run release=async --locks 100
