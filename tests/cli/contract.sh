#!/usr/bin/env bash
# The CLI contract: environment, exit codes, signal forwarding, lost lease, list/release/migrate.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

out=$("$sqlock" run envtest -- sh -c 'echo "$SQLOCK_NAME|$SQLOCK_FENCE|${#SQLOCK_OWNER}"')
check "environment of CMD" "envtest|1|32" "$out"

"$sqlock" run job -- sh -c 'exit 7'
check "exit status is CMD's" 7 $?

"$sqlock" run job -- /nonexistent/command 2>/dev/null
check "missing command exits 127" 127 $?

"$sqlock" run held -- sleep 30 &
holder=$!
for _ in $(seq 200); do "$sqlock" list | grep -q '^held ' && break; sleep 0.1; done
"$sqlock" run --wait 0 held -- true 2>/dev/null
check "--wait 0 on a held lock exits 75" 75 $?
"$sqlock" run --wait 300ms held -- true 2>/dev/null
check "--wait 300ms on a held lock exits 75" 75 $?
json=$("$sqlock" list --json)
for field in name owner fence acquired_at expires_at mode; do
  case "$json" in *"\"$field\""*) r=yes ;; *) r=no ;; esac
  check "list --json has $field" yes "$r"
done
kill -TERM $holder
wait $holder
check "SIGTERM is passed to CMD (exit 128+15)" 143 $?
"$sqlock" run --wait 0 held -- true
check "lock released after CMD was signalled" 0 $?

"$sqlock" run --url 'nosuch://x' x -- true 2>/dev/null
check "unknown scheme exits 64" 64 $?
"$sqlock" run --lease -1s x -- true 2>/dev/null
check "negative lease exits 64" 64 $?
"$sqlock" run --wait soon x -- true 2>/dev/null
check "bad duration exits 64" 64 $?
"$sqlock" run 2>/dev/null
check "missing arguments exit 64" 64 $?
"$sqlock" run --url "sqlite:$dir/no/such/dir/x.db" x -- true 2>/dev/null
check "unusable database path exits 64" 64 $?

# Lease lost while CMD runs: a forced release makes renewal fail; CMD gets SIGTERM; exit 70.
"$sqlock" run --lease 1s lost -- sh -c 'trap "echo got-term >'"$dir"'/term; exit 0" TERM; while :; do sleep 0.05; done' 2>/dev/null &
runner=$!
for _ in $(seq 200); do "$sqlock" list | grep -q lost && break; sleep 0.1; done
"$sqlock" release --force lost >/dev/null
check "release --force of a held lock" 0 $?
wait $runner
check "lost lease exits 70" 70 $?
check "CMD got SIGTERM on loss" got-term "$(cat "$dir/term" 2>/dev/null)"
"$sqlock" release --force lost >/dev/null
check "release --force of a free lock exits 1" 1 $?
"$sqlock" release lost 2>/dev/null
check "release without --force exits 64" 64 $?

"$sqlock" migrate >/dev/null
check "migrate on SQLite" 0 $?
# Output captured first: `grep -q` ends at its first match, and the writer still writing then
# dies of SIGPIPE (141 under pipefail).
schema=$("$sqlock" migrate --print)
check "migrate --print exits 0" 0 $?
grep -q "CREATE TABLE IF NOT EXISTS sqlock_locks" <<<"$schema"
check "migrate --print shows the schema" 0 $?

# The default URL: $XDG_STATE_HOME/sqlock/locks.db, directory created on demand.
(unset SQLOCK_URL; XDG_STATE_HOME=$dir/state "$sqlock" run d -- true)
check "default store under XDG_STATE_HOME" yes "$([ -f "$dir/state/sqlock/locks.db" ] && echo yes)"

json=$("$sqlock" bench --duration 300ms --threads 2 --contended --json 2>/dev/null)
for field in backend mode threads locks duration_s pairs pairs_per_sec latency_us handoff_us; do
  case "$json" in *"\"$field\""*) r=yes ;; *) r=no ;; esac
  check "bench --json has $field" yes "$r"
done

# The admin page and its API.
port=$((20000 + RANDOM % 20000))
SQLOCK_ADMIN_TOKEN=contract-token "$sqlock" serve --listen 127.0.0.1:$port >/dev/null 2>"$dir/serve.log" &
server=$!
"$sqlock" run served -- sleep 30 &
held=$!
for _ in $(seq 200); do curl -fs "http://127.0.0.1:$port/api/locks" | grep -q served && break; sleep 0.1; done
grep -q "<title>sqlock</title>" <<<"$(curl -fs "http://127.0.0.1:$port/")"
check "serve: page" 0 $?
grep -q '"name":"served"' <<<"$(curl -fs "http://127.0.0.1:$port/api/locks")"
check "serve: /api/locks lists the held lock" 0 $?
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{"name":"served"}' "http://127.0.0.1:$port/api/release")
check "serve: release without the admin token is refused" 401 "$code"
out=$(curl -fs -X POST -H 'Authorization: Bearer contract-token' -d '{"name":"served"}' "http://127.0.0.1:$port/api/release")
check "serve: release with the admin token" '{"actor":"admin","released":true}' "$out"
wait $held
check "serve: the holder saw the loss (exit 70)" 70 $?
kill $server

finish "CLI contract"
