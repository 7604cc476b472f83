#!/usr/bin/env bash
# `sqlock run` stops CMD's whole process group: on a lost lease (SIGTERM, then SIGKILL after
# --kill-after, even for a grandchild that ignores SIGTERM) and when sqlock itself is signalled.
set -uo pipefail
sqlock=$1
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
export SQLOCK_URL="sqlite:$dir/locks.db"
fails=0
check() {  # check DESCRIPTION EXPECTED ACTUAL
  if [ "$2" == "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}
wait_for_file() {  # the pid file written by the grandchild's parent, 10 s at most
  for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
  echo "FAIL: $1 never written"
  return 1
}
gone() {  # gone PID: "gone" once the process no longer exists (5 s at most), else "alive"
  for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || { echo gone; return; }; sleep 0.1; done
  echo alive
}

# A grandchild in the background of CMD: a forced release must stop it too.
"$sqlock" run --lease 2s bg -- sh -c "sleep 300 & echo \$! > $dir/bg.pid; wait" 2>/dev/null &
runner=$!
wait_for_file "$dir/bg.pid"
grandchild=$(cat "$dir/bg.pid")
check "grandchild runs while the lock is held" alive "$(kill -0 "$grandchild" 2>/dev/null && echo alive)"
"$sqlock" release --force bg >/dev/null
wait $runner
check "lost lease exits 70" 70 $?
check "grandchild gone after a lost lease" gone "$(gone "$grandchild")"

# A grandchild (and CMD) ignoring SIGTERM: SIGKILL after --kill-after 1s.
"$sqlock" run --lease 2s --kill-after 1s deaf -- sh -c "trap '' TERM; sh -c \"trap '' TERM; echo \\\$\\\$ > $dir/deaf.pid; while :; do sleep 0.2; done\" & wait" 2>/dev/null &
runner=$!
wait_for_file "$dir/deaf.pid"
grandchild=$(cat "$dir/deaf.pid")
"$sqlock" release --force deaf >/dev/null
wait $runner
check "lost lease with SIGTERM ignored exits 70" 70 $?
check "SIGTERM-ignoring grandchild gone after --kill-after" gone "$(gone "$grandchild")"

# CMD exits at once on SIGTERM but leaves a grandchild that ignores it: still killed.
"$sqlock" run --lease 2s --kill-after 1s orphan -- sh -c "sh -c \"trap '' TERM; echo \\\$\\\$ > $dir/orphan.pid; while :; do sleep 0.2; done\" & wait" 2>/dev/null &
runner=$!
wait_for_file "$dir/orphan.pid"
grandchild=$(cat "$dir/orphan.pid")
"$sqlock" release --force orphan >/dev/null
wait $runner
check "lost lease, CMD exited first: exits 70" 70 $?
check "left-behind grandchild gone after --kill-after" gone "$(gone "$grandchild")"

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

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all process-group checks passed"
