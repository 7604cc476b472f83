#!/usr/bin/env bash
# MySQL/MariaDB benchmarks on one server, all in one run:
#  1. the advisory ceilings, 1 thread, uncontended, in interleaved rounds: a raw libmariadb client
#     and Python MySQLdb doing SELECT GET_LOCK(n, 0) + SELECT RELEASE_LOCK(n), the raw client
#     running sqlock's lean pair (MariaDB: sqlock_advisory_lock + the two plain RELEASE_LOCKs the
#     library sends: what the SQL costs without the library), sqlock advisory and sqlock
#     pessimistic; means over the rounds and the ratios;
#     in the same rounds the row modes' ceiling: the raw client running an upsert (INSERT ... ON
#     DUPLICATE KEY UPDATE, taking the row when free or expired) + an owner-checked DELETE on a
#     table of the script's own (sqlock_bench_raw), beside sqlock optimistic;
#     then the contended handoff (4 threads, one lock) in advisory mode;
#  2. sqlock bench per mode beside mysqlslap running the same two CALLs per pair (skip: PART2=0).
# Usage: scripts/bench/mysql.sh BUILD_DIR [URL]   (URL: default $SQLOCK_TEST_MYSQL_URL; a
# durable private server: scripts/bench/mysql_durable_server.sh start prints its URL)
# Needs the sqlock and sqlock_mysql_get_lock_bench targets built, and python3-mysqldb.
set -u
build=${1:-build}
sqlock=$build/bin/sqlock
raw=$build/tests/benchmarks/sqlock_mysql_get_lock_bench
here=$(cd "$(dirname "$0")" && pwd)
url=${2:-${SQLOCK_TEST_MYSQL_URL:?give a URL or start the servers and source env.sh}}
secs=${BENCH_SECONDS:-5}
rounds=${ROUNDS:-5}
# mysql://user:pw@host:port/db
rest=${url#mysql://}
user=${rest%%:*}; rest=${rest#*:}; pw=${rest%%@*}; rest=${rest#*@}
host=${rest%%:*}; rest=${rest#*:}; port=${rest%%/*}; db=${rest#*/}; db=${db%%\?*}
client=(mariadb --no-defaults -h"$host" -P"$port" -u"$user" -p"$pw" "$db")
slap=(mysqlslap --no-defaults -h"$host" -P"$port" -u"$user" -p"$pw" --create-schema="$db" --iterations=1 --delimiter=';')
n="CONCAT('slap-', CONNECTION_ID())"
"$sqlock" migrate --url "$url" >/dev/null
# The lean SQL sent raw needs a live fence epoch, which the library makes on its first session.
"${client[@]}" -e "CALL sqlock_fence_epoch_raise(@e)" 2>/dev/null
echo "## mysql: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
"${client[@]}" -N -e "SELECT CONCAT('server ', VERSION(), ', innodb_flush_log_at_trx_commit=',
  @@innodb_flush_log_at_trx_commit, ', log_bin=', @@log_bin, ', sync_binlog=', @@sync_binlog)"
# The row modes' ceiling: the raw pair a user could write instead of sqlock's routines.
"${client[@]}" -e "CREATE TABLE IF NOT EXISTS sqlock_bench_raw (name VARBINARY(255) PRIMARY KEY,
  owner VARBINARY(64) NOT NULL, expires_at DATETIME(6) NOT NULL) ENGINE=InnoDB"
up="INSERT INTO sqlock_bench_raw (name, owner, expires_at) VALUES ({name}, 'o', UTC_TIMESTAMP(6) + INTERVAL 30 SECOND) ON DUPLICATE KEY UPDATE owner = IF(expires_at <= UTC_TIMESTAMP(6), VALUES(owner), owner), expires_at = IF(owner = VALUES(owner), VALUES(expires_at), expires_at) RETURNING owner = 'o'"
del="DELETE FROM sqlock_bench_raw WHERE name = {name} AND owner = 'o' RETURNING 1"
echo "### 1 thread, uncontended: $rounds interleaved rounds of ${secs}s"
pps() { grep -o '"pairs_per_sec":[0-9.]*' | cut -d: -f2; }
rate() { sed -n 's/.*pairs\/s \([0-9]*\).*/\1/p'; }
call="SELECT @f := sqlock_advisory_lock(CONCAT('sqlock:', {name}), 0)"
free="SELECT RELEASE_LOCK(CONCAT('sqlock:', {name})), RELEASE_LOCK(CONCAT('sqlock!', @f))"
echo "(raw+lean: $call; $free)"
for r in $(seq 1 "$rounds"); do
  a=$("$raw" "$url" "$secs" | rate)
  b=$(/usr/bin/python3 "$here/../../tests/benchmarks/mysql_get_lock_bench.py" "$url" "$secs" 2>/dev/null | rate)  # 0 without python3-mysqldb
  e=$("$raw" "$url" "$secs" "$call" "$free" | rate)
  c=$("$sqlock" bench --url "$url" --mode advisory --duration "${secs}s" --json 2>/dev/null | pps)
  d=$("$sqlock" bench --url "$url" --mode pessimistic --duration "${secs}s" --json 2>/dev/null | pps)
  f=$("$raw" "$url" "$secs" "$up" "$del" | rate)
  g=$("$sqlock" bench --url "$url" --mode optimistic --duration "${secs}s" --json 2>/dev/null | pps)
  printf 'round %d: raw %.0f  python %.0f  raw+lean %.0f  sqlock advisory %.0f  sqlock pessimistic %.0f  raw rows %.0f  sqlock optimistic %.0f  (load %s)\n' "$r" "$a" "$b" "$e" "$c" "$d" "$f" "$g" "$(cut -d' ' -f1 /proc/loadavg)"
done | awk '{ print; a += $4; b += $6; e += $8; c += $11; d += $14; f += $17; g += $20; n++ } END {
  printf "mean pairs/s: raw libmariadb %.0f, python MySQLdb %.0f, raw+lean %.0f, sqlock advisory %.0f, sqlock pessimistic %.0f, raw upsert+delete %.0f, sqlock optimistic %.0f\n", a / n, b / n, e / n, c / n, d / n, f / n, g / n
  printf "advisory / raw %.2f (goal >= 0.8), advisory / python %.2f (goal >= 1.2), advisory / raw+lean %.2f, advisory / pessimistic %.1f\n", c / a, b ? c / b : 0, c / e, c / d
  printf "pessimistic / raw upsert+delete %.2f, optimistic / raw upsert+delete %.2f (goal >= 0.9)\n", d / f, g / f }'
echo "\$ sqlock bench --url \$URL --mode advisory --threads 4 --contended --duration ${secs}s --json"
"$sqlock" bench --url "$url" --mode advisory --threads 4 --contended --duration "${secs}s" --json 2>/dev/null
echo
[ "${PART2:-1}" = 0 ] && exit 0
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
