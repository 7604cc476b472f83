#!/usr/bin/env bash
# Benchmark of releases that do not wait on Redis, in one run, on the test servers
# ($SQLOCK_TEST_REDIS_URL, $SQLOCK_TEST_REDLOCK_URL): one thread locking 100 names in a row with
# the default release=wait and with release=async, on one server and on Redlock, beside the raw
# primitive pair in redis-py (SET NX PX + EVALSHA compare-and-delete, two round trips per pair)
# and the same pair with each release pipelined with the next SET (one round trip per pair).
# Everything is interleaved over [rounds] rounds (the machine's load moves between them).
# Usage: scripts/bench/redis.sh [build-dir] [seconds] [rounds]   (prints raw output)
set -euo pipefail
build=${1:-build}
seconds=${2:-5}
rounds=${3:-1}
sqlock=$build/bin/sqlock
url=${SQLOCK_TEST_REDIS_URL:?start the test servers (scripts/servers.sh start redis)}
redlock=${SQLOCK_TEST_REDLOCK_URL:-}
port=${url##*:}
port=${port%%[/?]*}
py=/usr/bin/python3
raw=tests/backends/redis/redispy_raw_pair.py
echo "## redis: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
for ((round = 1; round <= rounds; round++)); do
  echo "## round $round, load $(cut -d' ' -f1-3 /proc/loadavg)"
  for u in "$url" ${redlock:+"$redlock"}; do
    for opts in "" "release=async"; do
      echo "\$ sqlock bench --url ${u%%://*}://...${opts:+?$opts} --duration ${seconds}s --locks 100 --json"
      "$sqlock" bench --url "$u${opts:+?$opts}" --duration "${seconds}s" --locks 100 --json 2>/dev/null
    done
  done
  for flag in "" "--pipelined"; do
    echo "\$ redispy_raw_pair.py --locks 100 --duration $seconds $flag --json"
    # shellcheck disable=SC2086
    $py $raw --port "$port" --locks 100 --duration "$seconds" $flag --json
  done
done
echo "## load after: $(cut -d' ' -f1-3 /proc/loadavg)"
