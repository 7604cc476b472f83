#!/usr/bin/env bash
# MariaDB/MySQL row modes beside their ceiling, alternating in one run. Each round, 1 thread,
# uncontended: mysqlslap running the raw pair (INSERT ... ON DUPLICATE KEY UPDATE of a row of
# sqlock_locks' shape + DELETE of it, autocommit), then `sqlock bench` pessimistic and
# optimistic; with BEFORE_BUILD and BEFORE_URL set, the same two `sqlock bench` runs of another
# build (an older schema version, in a database of its own) in the same round: before and after
# side by side. Then, per mode, what one pair costs the server, counted in one session running
# 200 pairs of the library's CALLs: statements (Com_*), transactions (Com_commit), storage-engine
# commits (Handler_commit) and row operations (Handler_*).
# Usage: [ROUNDS=4] [BENCH_SECONDS=5] [BEFORE_BUILD=dir BEFORE_URL=url]
#        scripts/bench/mysql_rows.sh BUILD_DIR [URL]     (URL: default $SQLOCK_TEST_MYSQL_URL)
set -u
build=${1:-build}
url=${2:-${SQLOCK_TEST_MYSQL_URL:?give a URL or start the servers and source env.sh}}
secs=${BENCH_SECONDS:-5}
rounds=${ROUNDS:-4}
before_build=${BEFORE_BUILD:-}
before_url=${BEFORE_URL:-}
client_for() {  # mysql://user:pw@host:port/db -> the mariadb client's arguments
  local rest=${1#mysql://} user pw host port db
  user=${rest%%:*}; rest=${rest#*:}; pw=${rest%%@*}; rest=${rest#*@}
  host=${rest%%:*}; rest=${rest#*:}; port=${rest%%/*}; db=${rest#*/}; db=${db%%\?*}
  echo "--no-defaults -h$host -P$port -u$user -p$pw $db"
}
read -r -a client <<<"$(client_for "$url")"
db=${client[-1]}
"$build/bin/sqlock" migrate --url "$url" >/dev/null
[ -n "$before_url" ] && "$before_build/bin/sqlock" migrate --url "$before_url" >/dev/null
pps() { grep -o '"pairs_per_sec":[0-9.]*' | cut -d: -f2; }
bench() { "$1/bin/sqlock" bench --url "$2" --mode "$3" --duration "${secs}s" --json 2>/dev/null | pps; }
echo "## mysql row modes: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
mariadb "${client[@]}" -N -e "SELECT CONCAT('server ', VERSION(),
  ', schema version ', sqlock_schema_version(), ', innodb_flush_log_at_trx_commit=',
  @@innodb_flush_log_at_trx_commit, ', log_bin=', @@log_bin)"
n="CONCAT('slap-', CONNECTION_ID())"
raw_pair="INSERT INTO sqlock_locks (name_key, name, owner, fence, version, acquired_at, expires_at, mode, holder) VALUES ($n, $n, 'slap-owner', 1, 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 30 SECOND, 'pessimistic', 'mysqlslap') ON DUPLICATE KEY UPDATE owner = VALUES(owner), expires_at = VALUES(expires_at);DELETE FROM sqlock_locks WHERE name_key = $n AND owner = 'slap-owner'"
slap_pairs=2000
echo "raw pair (mysqlslap, $slap_pairs pairs): $raw_pair"
echo "### 1 thread, uncontended: $rounds alternating rounds, sqlock bench ${secs}s each (pairs/s)"
for r in $(seq 1 "$rounds"); do
  out=$(mysqlslap "${client[@]:0:${#client[@]}-1}" --create-schema="$db" --iterations=1 \
    --delimiter=';' --concurrency=1 --number-of-queries=$((slap_pairs * 2)) --query="$raw_pair" 2>&1)
  s=$(awk '/Average number of seconds/ {print $(NF-1)}' <<<"$out")
  raw=$(awk -v s="${s:-0}" -v p="$slap_pairs" 'BEGIN { if (s > 0) printf "%.0f", p / s; else print 0 }')
  line="round $r: raw $raw"
  for m in pessimistic optimistic; do
    if [ -n "$before_url" ]; then
      b=$(bench "$before_build" "$before_url" $m)
      line="$line  before-$m $(printf %.0f "${b:-0}")"
    fi
    a=$(bench "$build" "$url" $m)
    line="$line  $m $(printf %.0f "${a:-0}")"
  done
  echo "$line"
done | awk '{ print; for (i = 3; i < NF; i += 2) { s[$i] += $(i + 1); k[i] = $i } n++ } END {
  printf "mean pairs/s:"; for (i = 3; i in k; i += 2) printf " %s %.0f", k[i], s[k[i]] / n; print ""
  printf "x raw:"; for (i = 5; i in k; i += 2) printf " %s %.2f", k[i], s[k[i]] / s["raw"]; print "" }'
# What one pair costs the server: session status deltas over 200 pairs sent by one client.
per_pair() {  # URL ACQUIRE RELEASE
  local -a c
  read -r -a c <<<"$(client_for "$1")"
  {
    echo "CREATE TEMPORARY TABLE sqlock_bench_s0 AS SELECT VARIABLE_NAME n, VARIABLE_VALUE + 0 v
            FROM information_schema.SESSION_STATUS
           WHERE VARIABLE_NAME LIKE 'COM\\_%' OR VARIABLE_NAME LIKE 'HANDLER\\_%';"
    for _ in $(seq 1 200); do echo "$2;"; echo "$3;"; done
    echo "SELECT '=', GROUP_CONCAT(CONCAT(LOWER(s.VARIABLE_NAME), ' ',
                   ROUND((s.VARIABLE_VALUE - s0.v) / 200, 2)) ORDER BY s.VARIABLE_NAME SEPARATOR ', ')
            FROM information_schema.SESSION_STATUS s JOIN sqlock_bench_s0 s0 ON s0.n = s.VARIABLE_NAME
           WHERE s.VARIABLE_VALUE - s0.v >= 100
             AND s.VARIABLE_NAME NOT IN ('HANDLER_READ_RND_NEXT', 'HANDLER_TMP_WRITE');"
  } | mariadb "${c[@]}" -N 2>&1 | sed -n 's/^=\t//p'
}
echo "### per pair, counted by the server (one session, 200 pairs)"
for m in pessimistic optimistic; do
  for side in after before; do
    u=$url; [ $side = before ] && u=$before_url
    [ -z "$u" ] && continue
    echo "$side $m: $(per_pair "$u" "CALL sqlock_acquire_exclusive_$m('bench-rows-$m', 'bench-owner', 30000, 'bench', 0)" "CALL sqlock_release_$m('bench-rows-$m', 'bench-owner')")"
  done
done
echo "raw pair: $(per_pair "$url" "${raw_pair%%;DELETE*}" "DELETE${raw_pair#*;DELETE}")"
