#!/usr/bin/env bash
# Every benchmark of docs/benchmarks.md in one run: starts the test servers, then runs each
# backend's sqlock bench beside its raw ceiling. Output: raw text on stdout.
# Usage: scripts/bench/all.sh BUILD_DIR
set -u
cd "$(dirname "$0")/../.."
build=$(realpath "${1:-build}")
export SQLOCK_RUN_DIR=${SQLOCK_RUN_DIR:-/tmp/sqlock-bench}
scripts/servers.sh start >/dev/null 2>&1 || { echo "servers did not start" >&2; exit 1; }
trap 'scripts/servers.sh stop >/dev/null 2>&1' EXIT
# shellcheck source=/dev/null
source "$SQLOCK_RUN_DIR/env.sh"
py=/usr/bin/python3
scripts/bench/sqlite.sh "$build"
scripts/bench/postgres.sh "$build"
scripts/bench/mysql.sh "$build"
echo "## redis: load $(cut -d' ' -f1-3 /proc/loadavg)"
$py tests/backends/redis/bench_compare.py --build "$build" --rounds 3 --seconds 3
scripts/bench/zookeeper.sh "$build"
