#!/usr/bin/env bash
# The full profile of the asynchronous API's many-waiter program (tests/async/async_waiters.cpp):
# per store, 10,000 acquisitions waiting at once on 1,000 names (10 each) on one client, every
# one obtaining its lock once; then 10,000 waits cancelled. Prints a Markdown table: library
# threads while they wait (/proc/self/task, beyond the program's own thread) and those the waits
# added, the store connections (the process's sockets to the server; PostgreSQL and Redis: the
# server's count of them too), the time until all had obtained their lock after the first holds
# were released, the names served in start order, the time from the first cancellation until
# the last wait had ended, and what was left on the server (list(), sessions waiting, busy names).
# CTest runs the same program with 200 waiters on 20 names (async.waiters.*).
# Usage: scripts/bench/async_waiters.sh [build-dir] [waiters] [names] [stores...]
#   (default stores: postgres postgres_advisory redis zookeeper etcd sqlite mysql memory; a store
#   whose URL variable is unset is left out)
set -euo pipefail
build=${1:-build}
waiters=${2:-10000}
names=${3:-1000}
shift $(($# < 3 ? $# : 3))
stores=("$@")
[[ ${#stores[@]} -gt 0 ]] || stores=(postgres postgres_advisory redis zookeeper etcd sqlite mysql memory)
program=$build/tests/sqlock_async_waiters
[[ -x $program ]] || { echo "build $program first (cmake --build $build --target sqlock_async_waiters)" >&2; exit 1; }
echo "## async waiters: $waiters on $names names; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
header=--header
status=0
for s in "${stores[@]}"; do
  rc=0
  "$program" --store "$s" --waiters "$waiters" --names "$names" $header || rc=$?
  if [[ $rc -eq 77 ]]; then
    echo "($s: URL variable unset, left out)" >&2
    continue
  fi
  header=  # printed with the first row
  if [[ $rc -ne 0 ]]; then
    echo "($s: a check failed, exit $rc; its row above)" >&2
    status=1
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
