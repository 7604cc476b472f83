#!/usr/bin/env bash
# Benchmarks of the SQLite default beside the one-machine baselines, in one run:
#  1. `sqlock bench` on sqlite: (both modes; 1 and 4 threads; uncontended and contended)
#  2. Google Benchmark: lock/unlock pair vs flock(2) and raw SQLite running the same statements
#  3. whole commands with hyperfine, in one run: `flock(1) FILE true` beside `sqlock run NAME --
#     true` and `sqlock --version` (SQLite is linked into the command; other backends are
#     modules it loads)
# Usage: scripts/bench/sqlite.sh [build-dir]   (prints Markdown-ready raw output)
set -euo pipefail
build=${1:-build}
sqlock=$build/bin/sqlock
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "## machine: $(nproc) cores, $(uname -r), $(date -u +%FT%TZ)"
for mode in pessimistic optimistic; do
  url="sqlite:$dir/bench-$mode.db?mode=$mode"
  for args in "--threads 1" "--threads 4" "--threads 4 --contended" "--threads 4 --locks 4 --contended"; do
    echo "\$ sqlock bench --url 'sqlite:…?mode=$mode' $args --duration 5s --json"
    # shellcheck disable=SC2086
    "$sqlock" bench --url "$url" $args --duration 5s --json 2>/dev/null
  done
done
echo
echo "\$ sqlock_local_bench --benchmark_min_time=2"
"$build/tests/benchmarks/sqlock_local_bench" --benchmark_min_time=2 2>/dev/null | grep -E '^[a-z_/]+ ' || true
echo
touch "$dir/flock"
export SQLOCK_URL="sqlite:$dir/cmd.db"
"$sqlock" run warmup -- true
echo "\$ hyperfine -N -w 20 -r 300 'flock FILE true' 'sqlock run NAME -- true' 'sqlock --version'"
hyperfine -N -w 20 -r 300 "flock $dir/flock true" "$sqlock run cmd -- true" "$sqlock --version" |
  grep -E 'Benchmark|Time|Range'
