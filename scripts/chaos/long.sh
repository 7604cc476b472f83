#!/usr/bin/env bash
# The long chaos profile: every backend, every fault that applies to it, 3 worker processes ×
# 16 threads × CYCLES cycles each (100000 by default), then a table of the checker's figures.
#   scripts/chaos/long.sh BUILD_DIR OUT_DIR [backend...]
# Environment: CYCLES (per thread), SECONDS_MAX (a run's time bound, faults spread over it),
# ROUNDS (times each backend's fault list is applied), THREADS, PROCS, NAMES, KIND (exclusive,
# shared or semaphore: name backends that offer the kind), PERMITS, WRITERS_PERCENT. Needs the
# shared test servers' URLs (source $SQLOCK_RUN_DIR/env.sh); server faults start private instances.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: long.sh BUILD_DIR OUT_DIR [backend...]}
out=${2:?usage: long.sh BUILD_DIR OUT_DIR [backend...]}
shift 2
cycles=${CYCLES:-100000}
seconds=${SECONDS_MAX:-36000}
rounds=${ROUNDS:-20}
threads=${THREADS:-16}
procs=${PROCS:-3}
names=${NAMES:-4}
kind=${KIND:-exclusive}
permits=${PERMITS:-4}
writers_percent=${WRITERS_PERCENT:-20}
declare -A faults=(
  [memory]=""
  [sqlite]="kill,stop,skew"
  [postgres]="kill,stop,skew,freeze-short,freeze-long,restart,blackhole,reset,delay,lost-reply"
  [mysql]="kill,stop,skew,freeze-short,freeze-long,restart,blackhole,reset,delay,lost-reply"
  [redis]="kill,stop,skew,freeze-short,freeze-long,restart,blackhole,reset,delay,lost-reply"
  [redlock]="kill,stop,skew,minority,majority"
  [zookeeper]="kill,stop,skew,freeze-short,freeze-long,restart,blackhole,reset,delay,lost-reply"
  [zk-ensemble]="kill,stop,leader-kill,member-kill"
  [etcd]="kill,stop,skew,freeze-short,freeze-long,restart,blackhole,reset,delay,lost-reply"
  [etcd-cluster]="kill,stop,leader-kill,member-kill,minority,majority"
  [postgres-sync]="kill,stop,promote-lagging"
  # Not in the default list: an asynchronous standby loses what it had not received (measured
  # in docs/reliability.md); the checker reports it.
  [postgres-async]="promote-lagging"
)
backends=("$@")
[ ${#backends[@]} -gt 0 ] || backends=(memory sqlite postgres postgres-sync mysql redis redlock zookeeper
  zk-ensemble etcd etcd-cluster)
mkdir -p "$out"
figures="$out/figures.jsonl"
: >"$figures"
status=0
for b in "${backends[@]}"; do
  echo "== $b: ${faults[$b]:-no faults}" >&2
  python3 "$here/chaos.py" --backend "$b" --build "$build" --out "$out/$b" --procs "$procs" \
    --threads "$threads" --names "$names" --cycles "$cycles" --seconds "$seconds" \
    --rounds "$rounds" --lease-ms 2000 --hold-us 2000 --faults "${faults[$b]}" \
    --kind "$kind" --permits "$permits" --writers-percent "$writers_percent" \
    --figures "$figures" | tee "$out/$b.txt" || status=1
done
python3 "$here/table.py" "$figures"
exit $status
