#!/usr/bin/env bash
# Many `sqlock run` processes at once on one lock: the commands must never overlap, and every
# one of them must run. Each command logs "start" and "end" with its id; the log must alternate.
set -euo pipefail
sqlock=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export SQLOCK_URL="sqlite:$dir/locks.db"
log=$dir/log
procs=8
rounds=5
for p in $(seq 1 $procs); do
  (
    for r in $(seq 1 $rounds); do
      "$sqlock" run --lease 10s shared-job -- sh -c "echo \"start $p.$r \$SQLOCK_FENCE\" >>$log; sleep 0.02; echo \"end $p.$r\" >>$log"
    done
  ) &
done
wait
lines=$(wc -l <"$log")
expected=$((procs * rounds * 2))
if [ "$lines" -ne "$expected" ]; then
  echo "FAIL: $lines log lines, expected $expected"
  exit 1
fi
# Strict alternation start X / end X, and fences strictly rising.
awk '
  NR % 2 == 1 { if ($1 != "start") { print "FAIL: overlap at line " NR ": " $0; exit 1 } id = $2;
                if ($3 + 0 <= last) { print "FAIL: fence " $3 " after " last; exit 1 } last = $3 + 0 }
  NR % 2 == 0 { if ($1 != "end" || $2 != id) { print "FAIL: overlap at line " NR ": " $0; exit 1 } }
' "$log"
echo "ok: $((procs * rounds)) commands from $procs processes ran one at a time, fences rising"
