#!/usr/bin/env bash
# `sqlock run --shared / --permits N / --at-least / --at-most`, `sqlock elect` and `sqlock leader`
# on SQLite, across processes; `list` shows each holder's kind.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

wait_listed() {  # wait_listed PATTERN COUNT: until `list` shows COUNT lines matching PATTERN
  for _ in $(seq 100); do
    [ "$("$sqlock" list | grep -c -- "$1")" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}

# Shared: two holders at once; an exclusive request is refused while they hold.
"$sqlock" run --shared rw -- sleep 30 &
r1=$!
"$sqlock" run --shared rw -- sleep 30 &
r2=$!
wait_listed "shared" 2
check "two shared holders at once, listed with their kind" 0 $?
"$sqlock" run --shared -n rw -- true
check "a third shared holder gets in" 0 $?
"$sqlock" run -n rw -- true 2>/dev/null
check "exclusive while shared holders hold exits 75" 75 $?
case "$("$sqlock" list --json)" in *'"kind":"shared"'*) r=yes ;; *) r=no ;; esac
check "list --json has the kind" yes "$r"
kill -TERM $r1 $r2
wait $r1 $r2
"$sqlock" run -n rw -- true
check "exclusive once the shared holders left" 0 $?
"$sqlock" run --shared --permits 2 rw -- true 2>/dev/null
check "--shared with --permits exits 64" 64 $?

# Permits: two of two taken; a third waits; another N is refused.
"$sqlock" run --permits 2 pool -- sleep 30 &
p1=$!
"$sqlock" run --permits 2 pool -- sleep 30 &
p2=$!
wait_listed "permit/2" 2
check "two permits held, listed as permit/2" 0 $?
"$sqlock" run --permits 2 -n pool -- true 2>/dev/null
check "a third permit of two exits 75" 75 $?
"$sqlock" run --permits 3 -n pool -- true 2>/dev/null
check "another number of permits exits 64" 64 $?
kill -TERM $p1
wait $p1
"$sqlock" run --permits 2 -n pool -- true
check "a freed permit is taken" 0 $?
kill -TERM $p2
wait $p2
"$sqlock" run --permits 0 pool -- true 2>/dev/null
check "--permits 0 exits 64" 64 $?

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

finish kinds
