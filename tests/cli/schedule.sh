#!/usr/bin/env bash
# `sqlock run --at-least / --at-most` (the scheduler's bounds), `sqlock elect` and
# `sqlock leader` on SQLite, across processes.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

# --at-most: CMD is stopped at the bound as on a lost lease.
"$sqlock" run --at-most 1s bounded -- sleep 30 2>/dev/null
check "--at-most stops CMD: exit 70" 70 $?
"$sqlock" run --wait 10s bounded -- true
check "the lock is free after --at-most" 0 $?

# --at-least: CMD ends at once, the lock stays for the rest of --at-least.
"$sqlock" run --at-least 3s -n daily -- true
check "--at-least runs CMD" 0 $?
"$sqlock" run -n daily -- true 2>/dev/null
check "--at-least keeps the lock after CMD ended" 75 $?
"$sqlock" run --wait 20s daily -- true
check "the lock frees itself after --at-least" 0 $?
"$sqlock" run --at-least 2s --at-most 1s x -- true 2>/dev/null
check "--at-least longer than --at-most exits 64" 64 $?

# elect / leader.
"$sqlock" leader nobody >/dev/null 2>&1
check "leader of an election nobody leads exits 1" 1 $?
"$sqlock" elect --value host-a:8080 svc -- sh -c "echo \$SQLOCK_FENCE >$dir/term; sleep 30" &
e1=$!
for _ in $(seq 100); do [ -s "$dir/term" ] && break; sleep 0.1; done
term=$(cat "$dir/term")
check "leader prints value and term" "host-a:8080|$term" "$("$sqlock" leader svc | paste -sd'|')"
case "$("$sqlock" leader --json svc)" in *'"value":"host-a:8080"'*) r=yes ;; *) r=no ;; esac
check "leader --json" yes "$r"
"$sqlock" elect -n --value host-b svc -- true 2>/dev/null
check "a second campaign is refused while one leads (75)" 75 $?
"$sqlock" elect svc -- true 2>/dev/null
check "elect without --value exits 64" 64 $?
kill -TERM $e1
wait $e1
"$sqlock" elect --wait 10s --value host-b svc -- sh -c 'echo "$SQLOCK_FENCE"' >"$dir/term2"
check "the next leader runs CMD" 0 $?
check "terms rise" yes "$([ "$(cat "$dir/term2")" -gt "$term" ] && echo yes)"

# Lost leadership (a forced release): CMD is stopped, exit 70.
"$sqlock" elect --lease 1s --value host-c lost-svc -- sleep 30 2>/dev/null &
e3=$!
for _ in $(seq 100); do "$sqlock" leader lost-svc >/dev/null 2>&1 && break; sleep 0.1; done
"$sqlock" release --force lost-svc >/dev/null
wait $e3
check "lost leadership exits 70" 70 $?

finish schedule
