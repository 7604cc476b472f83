# Runs one example program of README.md / docs/ on a fresh SQLite store (postgres_xact: on the
# test server of $SQLOCK_TEST_POSTGRES_URL) and checks that it does what the page says.
# Usage: run_examples.sh NAME PROGRAM   ($SQLOCK: the sqlock command, for `logging`)
set -uo pipefail
name=$1
program=$2
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
url="sqlite:$dir/locks.db"
fails=0
check() { # check DESCRIPTION EXPECTED ACTUAL
  if [ "$2" == "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}

# The PostgreSQL examples: skipped (77) when the test server's URL is unset, unless required.
require_postgres() {
  if [ -z "${SQLOCK_TEST_POSTGRES_URL:-}" ]; then
    [ -n "${SQLOCK_TEST_REQUIRE_ALL:-}" ] && { echo "FAIL: SQLOCK_TEST_POSTGRES_URL is unset"; exit 1; }
    echo "skip: SQLOCK_TEST_POSTGRES_URL is unset"
    exit 77
  fi
}
case $name in
lock)
  first=$("$program" "$url")
  check "one run prints its fence" yes "$([[ $first =~ ^fence\ [0-9]+$ ]] && echo yes)"
  for i in 1 2 3; do "$program" "$url" >"$dir/out$i" & done
  wait
  fences=$(cat "$dir"/out* | sed 's/^fence //' | sort -n | uniq)
  check "three processes at once: three fences" 3 "$(wc -l <<<"$fences")"
  check "each above the first run's" yes "$([ "$(head -1 <<<"$fences")" -gt "${first#fence }" ] && echo yes)"
  ;;
kinds)
  out=$("$program" "$url")
  echo "$out"
  check "read under the shared lock" "read config" "$(sed -n 1p <<<"$out")"
  check "encoded under a permit" yes "$([[ $(sed -n 2p <<<"$out") =~ ^encoded\ with\ fence\ [0-9]+$ ]] && echo yes)"
  check "led the election" yes "$([[ $(sed -n 3p <<<"$out") =~ ^primary,\ term\ [0-9]+$ ]] && echo yes)"
  check "a hold released by a worker" yes "$([[ $(sed -n 4p <<<"$out") =~ ^finished\ on\ a\ worker\ with\ fence\ [0-9]+$ ]] && echo yes)"
  check "nothing else" 4 "$(wc -l <<<"$out")"
  ;;
scheduled_job)
  out=$("$program" "$url")
  check "the first run of the period makes the report" yes \
    "$([[ $out =~ ^report\ with\ fence\ [0-9]+$'\n'ran$ ]] && echo yes)"
  check "a second run in the same period does not" "not run: this period's run has been made" \
    "$("$program" "$url")"
  ;;
logging)
  "$program" "$url" free-lock 2>"$dir/free.log"
  check "a free lock is obtained" 0 $?
  check "nothing logged at info for it" "" "$(cat "$dir/free.log")"
  if [ -z "${SQLOCK:-}" ]; then
    echo "skip: a held lock (built without the sqlock command to hold it)"
  else
    "$SQLOCK" run --url "$url" busy-lock -- sleep 60 &
    for _ in $(seq 100); do "$SQLOCK" list --url "$url" | grep -q '^busy-lock ' && break; sleep 0.1; done
    "$program" "$url" busy-lock 2>"$dir/busy.log"
    check "a held lock is not obtained" 1 $?
    cat "$dir/busy.log"
    check "giving up is logged at info" 1 \
      "$(grep -c "^info: gave up on lock 'busy-lock' on sqlite" "$dir/busy.log")"
  fi
  ;;
metrics)
  out=$("$program" "$url")
  check "one acquisition counted" 1 \
    "$(grep -c '^sqlock_acquisitions_total{.*backend="sqlite".*} 1$' <<<"$out")"
  check "one release counted" 1 "$(grep -c '^sqlock_releases_total{.*backend="sqlite".*} 1$' <<<"$out")"
  ;;
soci_locks)
  check "a transaction-scoped lock on the application's SOCI session" "ran 1 job" \
    "$("$program" "soci+sqlite3:${url#sqlite:}")"
  ;;
asio_server)
  require_postgres
  check "every request answered, every entity's balance exact" \
    "200 requests, balances e0=50 e1=50 e2=50 e3=50" "$("$program" "$SQLOCK_TEST_POSTGRES_URL")"
  ;;
postgres_xact)
  require_postgres
  check "the fenced write and both transaction-scoped locks" "paid, reports read 1" \
    "$("$program" "$SQLOCK_TEST_POSTGRES_URL")"
  ;;
*)
  echo "unknown example $name"
  exit 2
  ;;
esac
[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "example $name does what its page says"
