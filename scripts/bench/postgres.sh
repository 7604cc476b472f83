#!/usr/bin/env bash
# sqlock bench per mode beside pgbench -M prepared running the same two function calls
# (acquire + release with a fresh owner each time), back to back in one run.
# Usage: scripts/bench/postgres.sh BUILD_DIR   (needs SQLOCK_TEST_POSTGRES_URL, e.g. from
# $SQLOCK_RUN_DIR/env.sh after scripts/servers.sh start postgres)
set -u
build=${1:-build}
sqlock=$build/bin/sqlock
url=${SQLOCK_TEST_POSTGRES_URL:?start the servers and source env.sh}
secs=${BENCH_SECONDS:-10}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$sqlock" migrate --url "$url" >/dev/null
for mode in pessimistic optimistic advisory; do
  lease=", 30000"
  [ $mode = advisory ] && lease=""
  for c in u c; do
    name="'pgbench/u/' || CAST(:client_id AS text)"
    [ $c = c ] && name="'pgbench/c'"
    cat >"$dir/${mode}_$c.sql" <<SQL
\set k random(1, 1000000000)
SELECT fence, status FROM sqlock.acquire_$mode($name, 'owner-' || CAST(:k AS text)$lease, 'pgbench');
SELECT sqlock.release_$mode($name, 'owner-' || CAST(:k AS text));
SQL
  done
done
echo "## postgres: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
for mode in pessimistic optimistic advisory; do
  for threads in 1 4; do
    for c in u c; do
      flag=""
      [ $c = c ] && flag="--contended"
      [ $c = c ] && [ "$threads" = 1 ] && continue
      echo "\$ sqlock bench --url \$URL --mode $mode --threads $threads --duration ${secs}s $flag --json"
      "$sqlock" bench --url "$url" --mode $mode --threads $threads --duration "${secs}s" $flag --json 2>/dev/null
      echo "\$ pgbench -n -M prepared -c $threads -j $threads -T $secs -f ${mode}_$c.sql \$URL"
      pgbench -n -M prepared -c "$threads" -j "$threads" -T "$secs" -f "$dir/${mode}_$c.sql" "$url" 2>&1 |
        grep -E "^(tps|latency average)"
    done
  done
done
