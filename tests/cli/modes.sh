#!/usr/bin/env bash
# One name, one lock across the modes of a store, from the shell: `sqlock run` in one mode holds
# a name, `sqlock run -n` in another mode is refused (exit 75) until it ends. SQLite's two modes
# on the default store; PostgreSQL's row and advisory modes (SQLOCK_CLI_POSTGRES=1, in a schema
# of the test's own).
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

wait_listed() {  # wait_listed URL NAME: until `list` shows NAME
  for _ in $(seq 100); do
    "$sqlock" list --url "$1" | grep -q "^$2 " && return 0
    sleep 0.1
  done
  return 1
}

in_mode() {  # in_mode URL MODE: URL with mode=MODE
  case $1 in *\?*) echo "$1&mode=$2" ;; *) echo "$1?mode=$2" ;; esac
}

modes_exclude() {  # modes_exclude URL MODE_A MODE_B
  local a b name="mixed-$2-$3"
  a=$(in_mode "$1" "$2")
  b=$(in_mode "$1" "$3")
  "$sqlock" run --url "$a" "$name" -- sleep 30 &
  local pid=$!
  wait_listed "$b" "$name"
  check "$2 holds $name, listed in $3" 0 $?
  "$sqlock" run -n --url "$b" "$name" -- true 2>/dev/null
  check "$3 is refused while $2 holds (exit 75)" 75 $?
  kill -TERM $pid
  wait $pid 2>/dev/null
  "$sqlock" run -n --url "$b" "$name" -- true
  check "$3 gets $name once $2 let go" 0 $?
}

modes_exclude "$SQLOCK_URL" pessimistic optimistic
modes_exclude "$SQLOCK_URL" optimistic pessimistic

if [ "${SQLOCK_CLI_POSTGRES:-}" = 1 ]; then
  if [ -n "${SQLOCK_TEST_POSTGRES_URL:-}" ]; then
    schema=sqlock_cli_modes_$$
    url="$SQLOCK_TEST_POSTGRES_URL?schema=$schema"
    trap 'kill $(jobs -p) 2>/dev/null; psql "$SQLOCK_TEST_POSTGRES_URL" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" -c "DROP ROLE IF EXISTS ${schema}_execute" >/dev/null 2>&1; rm -rf "$dir"' EXIT
    "$sqlock" migrate --url "$url" >/dev/null
    modes_exclude "$url" pessimistic advisory
    modes_exclude "$url" advisory optimistic
  elif [ "${SQLOCK_TEST_REQUIRE_ALL:-}" = 1 ]; then
    check "SQLOCK_TEST_POSTGRES_URL set under SQLOCK_TEST_REQUIRE_ALL" set unset
  else
    echo "skip: PostgreSQL modes (SQLOCK_TEST_POSTGRES_URL unset)"
  fi
fi
finish modes
