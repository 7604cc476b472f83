#!/usr/bin/env bash
# `sqlock run --shared` and `--permits N` on SQLite, across processes; `list` shows each
# holder's kind.
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

finish kinds
