#!/usr/bin/env bash
# sqlock bench per mode beside mysqlslap running the same two CALLs per pair, interleaved.
# Usage: scripts/bench/mysql.sh BUILD_DIR   (needs SQLOCK_TEST_MYSQL_URL from env.sh)
set -u
build=${1:-build}
sqlock=$build/bin/sqlock
url=${SQLOCK_TEST_MYSQL_URL:?start the servers and source env.sh}
secs=${BENCH_SECONDS:-5}
# mysql://user:pw@host:port/db
rest=${url#mysql://}
user=${rest%%:*}; rest=${rest#*:}; pw=${rest%%@*}; rest=${rest#*@}
host=${rest%%:*}; rest=${rest#*:}; port=${rest%%/*}; db=${rest#*/}; db=${db%%\?*}
slap=(mysqlslap --no-defaults -h"$host" -P"$port" -u"$user" -p"$pw" --create-schema="$db" --iterations=1 --delimiter=';')
n="CONCAT('slap-', CONNECTION_ID())"
"$sqlock" migrate --url "$url" >/dev/null
echo "## mysql: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
for t in 1 4; do
  for m in pessimistic optimistic advisory; do
    echo "\$ sqlock bench --url \$URL --mode $m --threads $t --duration ${secs}s --json"
    "$sqlock" bench --url "$url" --mode $m --threads $t --duration "${secs}s" --json 2>/dev/null
    case $m in
      advisory) a="CALL sqlock_advisory_acquire($n, 'slap-owner', 'mysqlslap', 0)"; r="CALL sqlock_advisory_release($n, 'slap-owner')" ;;
      *) a="CALL sqlock_acquire_$m($n, 'slap-owner', 30000, 'mysqlslap')"; r="CALL sqlock_release_$m($n, 'slap-owner')" ;;
    esac
    pairs=$((1500 * t))
    out=$("${slap[@]}" --concurrency=$t --number-of-queries=$((pairs * 2)) --query="$a;$r" 2>&1)
    s=$(awk '/Average number of seconds/ {print $(NF-1)}' <<<"$out")
    echo "\$ mysqlslap --concurrency=$t --number-of-queries=$((pairs * 2)) --query=\"$a;$r\""
    if [ -n "$s" ]; then awk -v s="$s" -v p="$pairs" 'BEGIN {printf "mysqlslap pairs/s %.0f (%d pairs in %ss)\n", p / s, p, s}'; else echo "mysqlslap failed: $(grep -i error <<<"$out" | head -1)"; fi
  done
done
for m in pessimistic optimistic advisory; do
  echo "\$ sqlock bench --url \$URL --mode $m --threads 4 --contended --duration ${secs}s --json"
  "$sqlock" bench --url "$url" --mode $m --threads 4 --contended --duration "${secs}s" --json 2>/dev/null
done
