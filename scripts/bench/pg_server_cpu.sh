#!/usr/bin/env bash
# Server CPU time per advisory pair on PostgreSQL: the raw pg_try_advisory_lock +
# pg_advisory_unlock beside the library's advisory_lock_key + advisory_unlock_key, the same pair
# by name (advisory_lock + advisory_unlock; SCHEMA_V8 may name a schema at version 8), the recording
# pair acquire_advisory + release_advisory that SQL callers use (and, when SCHEMA_OLD
# names a scratch schema holding older routines as acquire_old/release_old, those too), as
# the CPU time of the server process that runs them (`perf stat -e task-clock -p`, Debian
# package linux-perf). Wall-clock pairs/s on a shared VM move by 2x with the scheduler; the
# server's CPU per pair is what the routines themselves add. Each run: one psql session runs
# PAIRS pairs of prepared EXECUTEs; a run of no pairs is subtracted (connection, prepare).
# Usage: scripts/bench/pg_server_cpu.sh [URL] [PAIRS] [RUNS]   (URL defaults to the test one)
set -euo pipefail
url=${1:-${SQLOCK_TEST_POSTGRES_URL:?start the servers and source env.sh, or pass a URL}}
pairs=${2:-4000}
runs=${3:-6}
schema=${BENCH_SCHEMA:-sqlock}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# cpu_ms FILE: the task-clock (ms) of the server process that runs FILE through psql.
cpu_ms() {
  local app="sqlock_cpu_$$_$RANDOM" pid=""
  PGAPPNAME=$app psql -X -qAt "$url" -f "$1" >/dev/null &
  local client=$!
  for _ in $(seq 100); do
    pid=$(psql -X -At "$url" -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$app'")
    [ -n "$pid" ] && break
    sleep 0.01
  done
  [ -n "$pid" ] || { echo "pg_server_cpu: the session did not show up" >&2; exit 1; }
  perf stat -x, -e task-clock -p "$pid" 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}'
  wait "$client"
}

# us_per_pair NAME PREPARE PAIR: one run, server CPU µs per pair (PAIR may use %d: the pair).
us_per_pair() {
  local f="$dir/$1.sql" z="$dir/$1-0.sql"
  { echo "$2"; echo "SELECT pg_sleep(0.5);"; } >"$z"
  { cat "$z"; for i in $(seq "$pairs"); do printf "$3\n" "$i" "$i"; done; } >"$f"
  local a b
  a=$(cpu_ms "$f")
  b=$(cpu_ms "$z")
  awk -v a="$a" -v b="$b" -v n="$pairs" 'BEGIN { printf "%.1f", (a - b) * 1000 / n }'
}

echo "## server CPU per pair, $pairs pairs x $runs alternating runs; load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A got
for _ in $(seq "$runs"); do
  got[raw]+=" $(us_per_pair raw "PREPARE l AS SELECT pg_try_advisory_lock(4242);
PREPARE u AS SELECT pg_advisory_unlock(4242);" "EXECUTE l; EXECUTE u;")"
  # The library's pair (schema version 9): no write per hold, the key computed by the client.
  got[sqlock]+=" $(us_per_pair sqlock "SELECT $schema.lock_key('cpu-bench') AS key \\gset
PREPARE l(text) AS SELECT $schema.advisory_lock_key(:key, 'cpu-bench', \$1, 'h') AS f;
PREPARE u(text, bigint) AS SELECT $schema.advisory_unlock_key(:key, 'cpu-bench', \$1, \$2, false);" "EXECUTE l('o%d') \\gset\nEXECUTE u('o%d', :f);")"
  # The same pair by name, the key computed in SQL (the library's pair of schema version 8; in
  # SCHEMA_V8 when it names a schema installed at version 8).
  v8=${SCHEMA_V8:-$schema}
  got[by_name]+=" $(us_per_pair by_name "PREPARE l(text) AS SELECT $v8.advisory_lock('cpu-bench', \$1, 'h') AS f;
PREPARE u(text, bigint) AS SELECT $v8.advisory_unlock('cpu-bench', \$1, \$2, false);" "EXECUTE l('o%d') \\gset\nEXECUTE u('o%d', :f);")"
  # The recording pair SQL callers use (acquire_advisory writes the hold's row).
  got[recording]+=" $(us_per_pair recording "PREPARE l(text) AS SELECT fence, status FROM $schema.acquire_advisory('cpu-bench', \$1, 'h');
PREPARE u(text) AS SELECT $schema.release_advisory('cpu-bench', \$1);" "EXECUTE l('o%d'); EXECUTE u('o%d');")"
  if [ -n "${SCHEMA_OLD:-}" ]; then
    got[old]+=" $(us_per_pair old "PREPARE l(text) AS SELECT fence, status FROM $SCHEMA_OLD.acquire_old('cpu-bench', \$1, 'h');
PREPARE u(text) AS SELECT $SCHEMA_OLD.release_old('cpu-bench', \$1);" "EXECUTE l('o%d'); EXECUTE u('o%d');")"
  fi
done
for k in "${!got[@]}"; do
  echo "$k:$(echo "${got[$k]}" | tr ' ' '\n' | sed '/^$/d' | sort -n | tr '\n' ' ')µs"
done
