# A signal while `sqlock run`, `hold` or `elect` waits for the lock stops the wait: sqlock exits
# 128 + the signal after the backend removed the waiter from the store's queue, so the next
# contender does not wait behind a ghost. Per store: a waiter behind a holder gets SIGINT
# (`run`, exit 130), SIGTERM (`hold`, 143) or SIGHUP (`elect`, 129); then the
# store shows no waiter (ZooKeeper: only the holder's node under the lock; etcd: only the
# holder's key; PostgreSQL: no session waiting for the advisory lock; MariaDB shows no GET_LOCK
# waiter by name), and `run -n` right after the holder releases gets the lock at once (a
# leftover waiter — a node until its session times out, a key until its lease ends, a wait
# inside PostgreSQL or MariaDB — would take it first). Needs the test servers' URLs
# (SQLOCK_TEST_*_URL); a store whose URL is unset is skipped, or fails under
# SQLOCK_TEST_REQUIRE_ALL=1.
source "$(dirname "$0")/lib.sh" "$1"
zkcli=${SQLOCK_TEST_ZKCLI:-/usr/share/zookeeper/bin/zkCli.sh}

hostport() {  # the first host:port of a URL
  local rest=${1#*://}
  rest=${rest#*@}
  rest=${rest%%/*}
  echo "${rest%%,*}"
}
root_of() {  # the path of a URL, without its query
  local rest=${1#*://}
  rest=${rest#*/}
  echo "${rest%%\?*}"
}
with_mode() {  # URL with mode=advisory
  case "$1" in *\?*) echo "$1&mode=advisory" ;; *) echo "$1?mode=advisory" ;; esac
}

# Waiters of lock NAME as the store shows them (URL NAME): nodes in the ZooKeeper queue and keys
# in the etcd queue but the holder's, sessions waiting in PostgreSQL for the advisory lock.
zk_waiters() {
  local out
  out=$("$zkcli" -server "$(hostport "$1")" ls "/$(root_of "$1")/locks/$2" 2>/dev/null | grep '^\[' | tail -1)
  out=${out#[}
  out=${out%]}
  echo $(($(echo "$out" | tr ',' '\n' | grep -c .) - 1))
}
etcd_waiters() {
  echo $(($(ETCDCTL_API=3 etcdctl --endpoints="$(hostport "$1")" get --prefix --keys-only \
    "$(root_of "$1")/$2/" 2>/dev/null | grep -c .) - 1))
}
pg_waiters() {
  psql "${1%%\?*}" -Atc "select count(*) from pg_locks where locktype = 'advisory' and not granted
    and objsubid = 1 and ((classid::bigint << 32) | objid::bigint) = sqlock.lock_key('$2')"
}

# count_until COUNTER URL NAME WANT TRIES: COUNTER's count of NAME's waiters, asked every 0.1 s
# until it is WANT (TRIES times at most); prints the last count.
count_until() {
  local n= _
  for _ in $(seq 1 "$5"); do
    n=$("$1" "$2" "$3")
    [ "$n" = "$4" ] && break
    sleep 0.1
  done
  echo "$n"
}

# stopped LABEL SIGNAL COUNTER URL NAME COMMAND...: COMMAND waits behind the holder of NAME,
# gets SIGNAL, exits 128 + SIGNAL's number and leaves no waiter in the store.
stopped() {
  local label=$1 sig=$2 counter=$3 url=$4 name=$5
  shift 5
  "$@" 2>"$dir/$name.waiter" &
  local waiter=$!
  if [ -n "$counter" ]; then
    # The waiter queues behind the holder (no time is asserted: up to 10 s on a loaded machine).
    check "$label: the waiter is queued" 1 "$(count_until "$counter" "$url" "$name" 1 100)"
  else
    sleep 1  # no view of the queue: time for the waiter to start waiting
  fi
  kill -s "$sig" $waiter
  wait $waiter
  local code=$? number
  number=$(kill -l "$sig")
  check "$label: SIG$sig while waiting exits $((128 + number))" $((128 + number)) $code
  check "$label: the message says so" "sqlock: interrupted while waiting for the lock" \
    "$(cat "$dir/$name.waiter")"
  [ -n "$counter" ] || return 0
  # The server ends a waiting session's statement when the cancel the command sent on its way
  # out arrives: within moments, not necessarily before the command's exit (up to 3 s here).
  check "$label: no waiter is left in the store" 0 "$(count_until "$counter" "$url" "$name" 0 30)"
}

# interrupted LABEL URL COUNTER: waiters of `run`, `hold` and `elect` interrupted on one store
# (COUNTER "" = no view of the store's queue: the next contender's attempt is the proof).
interrupted() {
  local label=$1 url=$2 counter=$3 name="intr-$$-$RANDOM"
  "$sqlock" hold -u "$url" "$name" >"$dir/$name.fence" 2>"$dir/$name.err" &
  local holder=$!
  for _ in $(seq 200); do [ -s "$dir/$name.fence" ] && break; sleep 0.1; done
  check "$label: the holder holds" yes "$([ -s "$dir/$name.fence" ] && echo yes || echo no)"
  stopped "$label: run" INT "$counter" "$url" "$name" "$sqlock" run -u "$url" -w 60s "$name" -- true
  stopped "$label: hold" TERM "$counter" "$url" "$name" "$sqlock" hold -u "$url" "$name"
  stopped "$label: elect" HUP "$counter" "$url" "$name" \
    "$sqlock" elect -u "$url" --value here -w 60s "$name" -- true
  kill -TERM $holder
  wait $holder
  check "$label: the holder releases on SIGTERM" 0 $?
  "$sqlock" run -u "$url" -n "$name" -- true
  check "$label: the next run -n gets the lock at once" 0 $?
}

# store LABEL BACKEND VARIABLE COUNTER [advisory]: the case on the store of $VARIABLE, when
# set and BACKEND is built.
store() {
  local label=$1 backend=$2 var=$3 counter=$4 mode=${5:-}
  case ",${SQLOCK_CLI_BACKENDS:-$backend}," in *",$backend,"*) ;; *)
    echo "skip: $label (not built)"
    return
    ;;
  esac
  local url=${!var:-}
  if [ -z "$url" ]; then
    if [ "${SQLOCK_TEST_REQUIRE_ALL:-0}" = 1 ]; then check "$var is set" set unset; else echo "skip: $label ($var unset)"; fi
    return
  fi
  [ "$mode" = advisory ] && url=$(with_mode "$url")
  # A fresh server may not have the schema yet (this test can run first): migrate it unless it
  # is current (re-installing the routines under other running tests is what they avoid too).
  case $backend in postgres | mysql)
    "$sqlock" list --url "$url" >/dev/null 2>&1 || "$sqlock" migrate --url "$url" >/dev/null
    ;;
  esac
  interrupted "$label" "$url" "$counter"
}

store zookeeper zookeeper SQLOCK_TEST_ZOOKEEPER_URL zk_waiters
store etcd etcd SQLOCK_TEST_ETCD_URL etcd_waiters
store "postgresql advisory" postgres SQLOCK_TEST_POSTGRES_URL pg_waiters advisory
store "mariadb advisory" mysql SQLOCK_TEST_MYSQL_URL "" advisory

finish interrupt
