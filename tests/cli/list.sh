# `sqlock list` as a table: the columns (acquired, held for, expires in), aligned under their
# headers whatever the width of the names (multibyte ones too), control characters of names and
# holders made harmless; on PostgreSQL's advisory mode (SQLOCK_CLI_POSTGRES=1, in a schema of
# its own) a session-bound hold expires with its session; `list --waiting`: unsupported on
# SQLite, and on ZooKeeper and etcd (SQLOCK_CLI_ZOOKEEPER=1, SQLOCK_CLI_ETCD=1) a waiting
# `sqlock run` listed first in line until it is granted; on PostgreSQL and MySQL
# (SQLOCK_CLI_POSTGRES=1, SQLOCK_CLI_MYSQL=1) listed without a position until it is granted.
source "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8 # ${#var} counts characters
printf -v evil 'esc\033[31mred'
"$sqlock" run -l 45s orders:42 -- sleep 60 &
"$sqlock" run -l 45s "a-much-longer-lock-name-than-the-others/€" -- sleep 60 &
"$sqlock" run --permits 3 encoder -- sleep 60 &
"$sqlock" run "$evil" -- sleep 60 &
for _ in $(seq 100); do [ "$("$sqlock" list | wc -l)" -ge 5 ] && break; sleep 0.1; done
out=$("$sqlock" list)
header=$(head -1 <<<"$out")
echo "$out"

check "header" "NAME KIND FENCE ACQUIRED HELD FOR EXPIRES IN MODE HOLDER" "$(echo $header)"
check "a row per hold" 5 "$(wc -l <<<"$out")"
check "no control character reaches the terminal" 0 "$(grep -c $'\033' <<<"$out")"
check "a control character is shown as ?" 1 "$(grep -c 'esc?\[31mred' <<<"$out")"
check "a permit's kind" 1 "$(grep -c ' permit/3 ' <<<"$out")"

at() {  # at TEXT LINE: the column where TEXT starts in LINE (-1 when absent)
  [[ $2 == *"$1"* ]] || { echo -1; return; }
  local before=${2%%"$1"*}
  echo ${#before}
}
mode_col=$(at MODE "$header")
holder_col=$(at HOLDER "$header")
fence_end=$(($(at FENCE "$header") + 5))
left_end=$(($(at "EXPIRES IN" "$header") + 10))
misaligned=0
while IFS= read -r line; do
  [ "$(at pessimistic "$line")" = "$mode_col" ] || misaligned=$((misaligned + 1))
  [ "$(at "$(hostname)" "$line")" = "$holder_col" ] || misaligned=$((misaligned + 1))
  # right-aligned: the fence and the time left end under the end of their headers
  [[ ${line:fence_end-1:2} =~ ^[0-9]\ $ ]] || misaligned=$((misaligned + 1))
  [[ ${line:left_end-1:2} =~ ^s\ $ ]] || misaligned=$((misaligned + 1))
done < <(tail -n +2 <<<"$out")
check "every column starts (or ends) under its header" 0 "$misaligned"

row=$(grep '^orders:42 ' <<<"$out")
acquired=${row:$(at ACQUIRED "$header"):20}
check "acquired: the store's UTC time" yes \
  "$([[ $acquired =~ ^20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z$ ]] && echo yes)"
read -r held left <<<"$(awk '{print $5, $6}' <<<"$row")"
check "held for: a duration" yes "$([[ $held =~ ^[0-9]+(ms|s)$ ]] && echo yes)"
check "expires in: seconds left of the 45s lease" yes \
  "$([[ $left =~ ^([0-9]+)s$ ]] && [ "${BASH_REMATCH[1]}" -le 45 ] && echo yes)"
check "the 30s default lease expires sooner" yes \
  "$(grep '^encoder ' <<<"$out" | awk '{print $6}' | grep -qE '^([0-9]|[12][0-9]|30)s$' && echo yes)"
kill $(jobs -p) 2>/dev/null
wait 2>/dev/null

"$sqlock" list --waiting >/dev/null 2>&1
check "SQLite cannot tell who waits: exit 64" 64 "$?"

# waiting_on KIND URL POSITION: a `sqlock run` waiting behind a holder is listed (at POSITION:
# 1, or - where the store keeps no queue order), then leaves the list.
waiting_on() {
  local name="cli-waiting-$1-$$-$RANDOM" holder_pid waiter_pid out
  # The SQL stores' schema (this test may run before any other has migrated the database).
  if [ "$3" = - ]; then "$sqlock" migrate --url "$2" >/dev/null; fi
  "$sqlock" run --url "$2" "$name" -- sleep 60 &
  holder_pid=$!
  for _ in $(seq 100); do "$sqlock" list --url "$2" --prefix "$name" | grep -q "^$name " && break; sleep 0.1; done
  "$sqlock" run --url "$2" --wait 20s --holder "waiter-$$" "$name" -- true &
  waiter_pid=$!
  for _ in $(seq 100); do
    out=$("$sqlock" list --url "$2" --waiting --prefix "$name")
    grep -q "waiter-$$" <<<"$out" && break
    sleep 0.1
  done
  echo "$out"
  check "$1: header" "NAME POSITION KIND SINCE WAITED FOR HOLDER" "$(head -1 <<<"$out" | xargs)"
  check "$1: the waiting run, at position $3" "$name $3 exclusive waiter-$$" \
    "$(awk 'NR == 2 {print $1, $2, $3, $NF}' <<<"$out")"
  check "$1: JSON" "1 waiter-$$" "$("$sqlock" list --url "$2" --waiting --json --prefix "$name" |
    python3 -c 'import json, sys; r = json.load(sys.stdin); print(len(r), r[0]["holder"])')"
  kill "$holder_pid"
  wait "$waiter_pid"
  check "$1: the waiter ran once granted" 0 "$?"
  check "$1: nobody waits any more" "no requests waiting" \
    "$("$sqlock" list --url "$2" --waiting --prefix "$name")"
}
for backend in ZOOKEEPER ETCD POSTGRES MYSQL; do
  enabled=SQLOCK_CLI_$backend url_var=SQLOCK_TEST_${backend}_URL
  [ "${!enabled:-}" = 1 ] || continue
  position=1
  case $backend in POSTGRES | MYSQL) position=- ;; esac
  if [ -n "${!url_var:-}" ]; then
    waiting_on "${backend,,}" "${!url_var}" "$position"
  elif [ "${SQLOCK_TEST_REQUIRE_ALL:-}" = 1 ]; then
    check "$url_var set under SQLOCK_TEST_REQUIRE_ALL" set unset
  else
    echo "skip: waiting requests on ${backend,,} ($url_var unset)"
  fi
done

if [ "${SQLOCK_CLI_POSTGRES:-}" = 1 ]; then
  if [ -n "${SQLOCK_TEST_POSTGRES_URL:-}" ]; then
    schema=sqlock_cli_list_$$
    url="$SQLOCK_TEST_POSTGRES_URL?schema=$schema&mode=advisory"
    trap 'kill $(jobs -p) 2>/dev/null; psql "$SQLOCK_TEST_POSTGRES_URL" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1; rm -rf "$dir"' EXIT
    "$sqlock" migrate --url "$url" >/dev/null
    "$sqlock" run --url "$url" advisory-hold -- sleep 60 &
    for _ in $(seq 100); do "$sqlock" list --url "$url" | grep -q advisory-hold && break; sleep 0.1; done
    check "a session-bound hold expires with its session" session \
      "$("$sqlock" list --url "$url" | awk '/^advisory-hold /{print $6}')"
  elif [ "${SQLOCK_TEST_REQUIRE_ALL:-}" = 1 ]; then
    check "SQLOCK_TEST_POSTGRES_URL set under SQLOCK_TEST_REQUIRE_ALL" set unset
  else
    echo "skip: session-bound hold (SQLOCK_TEST_POSTGRES_URL unset)"
  fi
fi
finish list
