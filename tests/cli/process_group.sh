#!/usr/bin/env bash
# `sqlock run` stops CMD's whole process group: on a lost lease (SIGTERM, then SIGKILL after
# --kill-after, even for a grandchild that ignores SIGTERM) and when sqlock itself is signalled.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
wait_for_file() {  # the pid file written for the grandchild, 10 s at most
  for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
  echo "FAIL: $1 never written"
  return 1
}
gone() {  # gone PID: "gone" once the process no longer exists (5 s at most), else "alive"
  for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || { echo gone; return; }; sleep 0.1; done
  echo alive
}
# lost CASE KILL_AFTER SCRIPT: `sh -c SCRIPT` runs under lock CASE and starts a grandchild whose
# pid it writes to $dir/CASE.pid; a forced release must make sqlock exit 70 with the
# grandchild gone.
lost() {
  "$sqlock" run --lease 2s --kill-after "$2" "$1" -- sh -c "$3" 2>/dev/null &
  local runner=$! grandchild
  wait_for_file "$dir/$1.pid"
  grandchild=$(cat "$dir/$1.pid")
  check "$1: grandchild runs while the lock is held" yes "$(kill -0 "$grandchild" 2>/dev/null && echo yes)"
  "$sqlock" release --force "$1" >/dev/null
  wait $runner
  check "$1: lost lease exits 70" 70 $?
  check "$1: grandchild gone afterwards" gone "$(gone "$grandchild")"
}
# A grandchild that ignores SIGTERM and writes its pid to $dir/$1.pid.
deaf() { echo "sh -c \"trap '' TERM; echo \\\$\\\$ > $dir/$1.pid; while :; do sleep 0.2; done\""; }

# A grandchild in the background of CMD (the default --kill-after).
lost bg 10s "sleep 300 & echo \$! > $dir/bg.pid; wait"
# CMD and its grandchild both ignore SIGTERM: SIGKILL after --kill-after 1s.
lost deaf 1s "trap '' TERM; $(deaf deaf) & wait"
# CMD exits at once on SIGTERM but leaves a grandchild that ignores it: still killed.
lost orphan 1s "$(deaf orphan) & wait"

# SIGTERM to sqlock reaches the grandchild (the whole group), which reports it.
"$sqlock" run fwd -- sh -c "sh -c \"trap 'echo got-term > $dir/fwd.term; exit 0' TERM; echo \\\$\\\$ > $dir/fwd.pid; while :; do sleep 0.1; done\" & wait" 2>/dev/null &
runner=$!
wait_for_file "$dir/fwd.pid"
kill -TERM $runner
wait $runner
for _ in $(seq 50); do [ -s "$dir/fwd.term" ] && break; sleep 0.1; done
check "SIGTERM to sqlock reaches the grandchild" got-term "$(cat "$dir/fwd.term" 2>/dev/null)"
check "lock free after CMD was signalled" 0 "$("$sqlock" run --wait 0 fwd -- true; echo $?)"

"$sqlock" run --kill-after soon x -- true 2>/dev/null
check "bad --kill-after exits 64" 64 $?

finish "process-group"
