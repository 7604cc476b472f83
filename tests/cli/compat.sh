#!/usr/bin/env bash
# The command on a peer's layout (compat=shedlock, SQLite): `migrate` creates ShedLock's table
# and nothing else; `run --at-least/--at-most` leaves the row as ShedLock's unlock does
# (lock_until = locked_at + at_least), so a second run is not obtained (75) until then; `list`
# shows the hold; a row ShedLock wrote (raw SQL, its JDBC provider's insert with client time in
# epoch milliseconds) keeps `run` out.
set -euo pipefail
sqlock=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db=$dir/locks.db
url="sqlite:$db?compat=shedlock&shedlock_table=jobs_lock"
fail() { echo "FAIL: $*"; exit 1; }

grep -q "table of" <<<"$("$sqlock" migrate --url "$url")" || fail "migrate did not report the table"
tables=$(sqlite3 "$db" "SELECT group_concat(name) FROM sqlite_master WHERE type = 'table'")
[ "$tables" = jobs_lock ] || fail "tables after migrate: $tables"
grep -q "CREATE TABLE IF NOT EXISTS jobs_lock" <<<"$("$sqlock" migrate --print --url "$url")" ||
  fail "--print does not show the DDL"

"$sqlock" run --url "$url" --at-least 3s --at-most 20s nightly true
span=$(sqlite3 "$db" "SELECT lock_until - locked_at FROM jobs_lock WHERE name = 'nightly'")
[ "$span" -ge 2900 ] && [ "$span" -le 3300 ] || fail "lock_until - locked_at = $span ms, not ~3000"
rc=0
"$sqlock" run --url "$url" --wait 0 nightly true || rc=$?
[ "$rc" -eq 75 ] || fail "a run inside at_least exited $rc, not 75"
grep -q "nightly" <<<"$("$sqlock" list --url "$url")" || fail "list does not show the held row"

now=$(($(date +%s%3N)))
sqlite3 "$db" "INSERT INTO jobs_lock(name, lock_until, locked_at, locked_by) VALUES('peer-job', $((now + 30000)), $now, 'java-host')"
rc=0
"$sqlock" run --url "$url" --wait 0 peer-job true || rc=$?
[ "$rc" -eq 75 ] || fail "a run under ShedLock's row exited $rc, not 75"
sqlite3 "$db" "UPDATE jobs_lock SET lock_until = $(date +%s%3N) WHERE name = 'peer-job' AND locked_by = 'java-host'"
"$sqlock" run --url "$url" --wait 0 peer-job true || fail "a run after ShedLock's unlock failed"
echo "ok: compat=shedlock from the command line"
