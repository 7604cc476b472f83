#!/usr/bin/env bash
# `sqlock run` through pgbouncer (scripts/servers.d/15-pgbouncer.sh): two processes taking one
# lock through transaction pooling, with nothing declared, never overlap; advisory mode through
# transaction pooling is refused with exit 64 and a message naming the pool mode and what to
# use instead; `sqlock migrate` through it is refused (its session lock would stay on a pooled
# server session). Needs SQLOCK_TEST_PGBOUNCER_TX_URL and SQLOCK_TEST_POSTGRES_URL (the same
# database, for `sqlock migrate`: a migration takes a session lock, which only a direct
# connection keeps).
source "$(dirname "$0")/lib.sh"
tx=${SQLOCK_TEST_PGBOUNCER_TX_URL:-}
direct=${SQLOCK_TEST_POSTGRES_URL:-}
if [ -z "$tx" ] || [ -z "$direct" ]; then
  if [ "${SQLOCK_TEST_REQUIRE_ALL:-}" = 1 ]; then
    echo "FAIL: SQLOCK_TEST_PGBOUNCER_TX_URL or SQLOCK_TEST_POSTGRES_URL unset under SQLOCK_TEST_REQUIRE_ALL"
    exit 1
  fi
  echo "skip: SQLOCK_TEST_PGBOUNCER_TX_URL or SQLOCK_TEST_POSTGRES_URL unset"
  exit 0
fi
"$sqlock" migrate --url "$direct" >/dev/null
check "migrate (direct)" 0 $?

name="pgbouncer-cli-$$-$RANDOM"
log=$dir/log
rounds=6
for p in 1 2; do
  (
    for r in $(seq 1 $rounds); do
      "$sqlock" run -u "$tx?mode=pessimistic" --lease 10s --wait 30s "$name" -- \
        sh -c "echo \"start $p.$r \$SQLOCK_FENCE\" >>$log; sleep 0.05; echo \"end $p.$r\" >>$log" ||
        echo "error $p.$r $?" >>"$log"
    done
  ) &
done
wait
check "every run ran" $((2 * rounds * 2)) "$(wc -l <"$log" | tr -d ' ')"
verdict=$(awk '
  NR % 2 == 1 { if ($1 != "start") { print "overlap at line " NR ": " $0; exit } id = $2;
                if ($3 + 0 <= last) { print "fence " $3 " after " last; exit } last = $3 + 0 }
  NR % 2 == 0 { if ($1 != "end" || $2 != id) { print "overlap at line " NR ": " $0; exit } }
  END { print "ok" }' "$log" | head -1)
check "runs through transaction pooling never overlap, fences rise" ok "$verdict"

"$sqlock" run -u "$tx?mode=advisory&pooler=transaction" "$name" -- true 2>"$dir/declared.err"
check "advisory mode under pooler=transaction exits 64" 64 $?
check "the message names the pool mode" yes \
  "$(grep -q 'transaction pooling' "$dir/declared.err" && echo yes || echo no)"
check "the message names what to use" yes \
  "$(grep -q 'mode=pessimistic' "$dir/declared.err" && echo yes || echo no)"
"$sqlock" run -u "$tx?mode=advisory" "$name" -- true 2>"$dir/detected.err"
check "advisory mode behind an undeclared pooler exits 64" 64 $?
check "the message says how to declare session pooling" yes \
  "$(grep -q 'pooler=session' "$dir/detected.err" && echo yes || echo no)"
"$sqlock" migrate --url "$tx" 2>"$dir/migrate.err"
check "sqlock migrate through an undeclared pooler exits 64" 64 $?
check "the message says where to migrate" yes \
  "$(grep -q 'reaches the server directly' "$dir/migrate.err" && echo yes || echo no)"
"$sqlock" migrate --url "$tx?pooler=transaction" 2>/dev/null
check "sqlock migrate under pooler=transaction exits 64" 64 $?
finish "pgbouncer"
