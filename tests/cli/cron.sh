#!/usr/bin/env bash
# docs/cron.md: the same crontab line on three machines runs the job once per period. Three
# processes play the machines: each fires the same `sqlock run --at-least` line at the start of
# every period, shifted by its clock skew (0, 0.4 s, 0.8 s); the job itself ends at once. Each
# period must show exactly one run.
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

period=3 periods=3
start=$(($(date +%s) + 2))
machine() {  # machine ID SHIFT
  for p in $(seq 1 $periods); do
    at=$(awk -v s="$start" -v p="$p" -v per="$period" -v sh="$2" 'BEGIN { printf "%.3f", s + (p - 1) * per + sh }')
    now=$(date +%s.%N)
    sleep "$(awk -v a="$at" -v n="$now" 'BEGIN { d = a - n; printf "%.3f", (d > 0 ? d : 0) }')"
    # The crontab line (minus the schedule): skip quietly when another machine has the period.
    "$sqlock" run --at-least 2s --wait 0 -E 0 -q nightly-report -- sh -c "echo $p $1 >>$dir/runs"
  done
}
machine a 0 &
machine b 0.4 &
machine c 0.8 &
wait
for p in $(seq 1 $periods); do
  check "period $p ran once" 1 "$(grep -c "^$p " "$dir/runs")"
done
check "no other runs" $periods "$(wc -l <"$dir/runs")"
finish cron
