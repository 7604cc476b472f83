#!/usr/bin/env bash
# A `sqlock run` whose wait for the lock lasts longer than its own --lease runs its command and
# keeps the lock: the lease starts when the store grants the lock. (In PostgreSQL advisory mode a
# wait inside the server once counted against the lease, so such a waiter got the lock and was
# told at once that it had lost it: exit 70, the command never ran.) Per store: a holder keeps
# the name for 3 s; a waiter with --lease 1s --wait 30s must run its command, which outlives two
# more leases, and exit 0. Needs the test servers' URLs (SQLOCK_TEST_*_URL); a store whose URL is
# unset is skipped, or fails under SQLOCK_TEST_REQUIRE_ALL=1. The stores run at once.
source "$(dirname "$0")/lib.sh" "$1"

with_mode() {  # URL with mode=advisory
  case "$1" in *\?*) echo "$1&mode=advisory" ;; *) echo "$1?mode=advisory" ;; esac
}

# waited LABEL URL: the case on one store, in the background; its verdict in $dir/LABEL.out.
waited() {
  local label=$1 url=$2 name="longwait-$$-$RANDOM"
  local out="$dir/${label// /_}"
  "$sqlock" run -u "$url" "$name" -- sh -c "echo held >'$out.held'; sleep 3" &
  local holder=$!
  for _ in $(seq 200); do [ -s "$out.held" ] && break; sleep 0.05; done
  local ran code
  ran=$("$sqlock" run -u "$url" --lease 1s --wait 30s "$name" -- sh -c 'sleep 2.2; echo ran' 2>"$out.err")
  code=$?
  wait $holder
  echo "$label|$code|$ran|$(tr '\n' ' ' <"$out.err")" >"$out.verdict"
}

# store LABEL BACKEND VARIABLE [advisory]: the case on the store of $VARIABLE, when set and
# BACKEND is built.
pids=()
store() {
  local label=$1 backend=$2 var=$3 mode=${4:-}
  case ",${SQLOCK_CLI_BACKENDS:-$backend}," in *",$backend,"*) ;; *)
    echo "skip: $label (not built)"
    return
    ;;
  esac
  local url=$SQLOCK_URL
  [ "$backend" = sqlite ] || url=${!var:-}
  if [ -z "$url" ]; then
    if [ "${SQLOCK_TEST_REQUIRE_ALL:-0}" = 1 ]; then check "$var is set" set unset; else echo "skip: $label ($var unset)"; fi
    return
  fi
  [ "$mode" = advisory ] && url=$(with_mode "$url")
  waited "$label" "$url" &
  pids+=($!)
}

store sqlite sqlite ""
store "postgresql pessimistic" postgres SQLOCK_TEST_POSTGRES_URL
store "postgresql advisory" postgres SQLOCK_TEST_POSTGRES_URL advisory
store "mariadb pessimistic" mysql SQLOCK_TEST_MYSQL_URL
store "mariadb advisory" mysql SQLOCK_TEST_MYSQL_URL advisory
store redis redis SQLOCK_TEST_REDIS_URL
store zookeeper zookeeper SQLOCK_TEST_ZOOKEEPER_URL
store etcd etcd SQLOCK_TEST_ETCD_URL
for p in "${pids[@]}"; do wait "$p"; done
for v in "$dir"/*.verdict; do
  [ -e "$v" ] || continue
  IFS='|' read -r label code ran err <"$v"
  check "$label: a wait longer than the lease runs the command (exit 0) ${err:+($err)}" "0 ran" "$code $ran"
done
finish long_wait
