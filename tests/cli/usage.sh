# What the command says: -u on every subcommand that opens the store, no password in any
# message (the parser's errors included), each subcommand's exit-code footer, NAME required
# before `--`, who holds a lock not obtained, --holder, and a missing schema's own exit code 78
# (on PostgreSQL when SQLOCK_CLI_POSTGRES=1).
source "$(dirname "$0")/lib.sh"

for sub in leader list release migrate bench serve run elect hold; do
  check "$sub takes -u" yes "$("$sqlock" $sub --help | grep -q -- '-u,--url' && echo yes)"
done
check "list -u URL" "no locks held" "$("$sqlock" list -u "sqlite:$dir/u.db")"

# Passwords: in the parser's errors, in a malformed PostgreSQL URL, in a bad duration.
pw=Hunter2secret
"$sqlock" list -u "postgresql://u:$pw@h/db" --bogus 2>"$dir/e1"
check "a parse error exits 64" 64 $?
"$sqlock" list "postgresql://u:$pw@h/db" -u 2>>"$dir/e1"
"$sqlock" run --wait "postgresql://u:$pw@h/db" x -- true 2>>"$dir/e1"
check "a bad duration quoting a URL exits 64" 64 $?
"$sqlock" list --url "postgresql:/user:$pw@host/db" 2>>"$dir/e1"
"$sqlock" list --url "postgresql://h/db?password=$pw&bogus=1" 2>>"$dir/e1"
"$sqlock" list --url "redis://:$pw@127.0.0.1:1/0?bogus=1" 2>>"$dir/e1"
check "messages were printed" yes "$([ "$(wc -l <"$dir/e1")" -ge 5 ] && echo yes)"
check "no password in any of them" 0 "$(grep -c "$pw" "$dir/e1")"

# Footers: the codes of the subcommand itself.
check "run's footer" yes "$("$sqlock" run --help | grep -q '127 CMD not found' && echo yes)"
check "hold's footer" yes "$("$sqlock" hold --help | grep -q '^Exit: 0 released' && echo yes)"
check "leader's footer lists 1" yes "$("$sqlock" leader --help | grep -q '1 nobody leads' && echo yes)"
check "list's footer names no CMD" no "$("$sqlock" list --help | grep -q 'CMD' && echo yes || echo no)"
n=0
for s in run elect hold leader list release migrate bench serve; do
  "$sqlock" $s --help | grep -q '78 sqlock schema' && n=$((n + 1))
done
check "every footer lists 78" 9 "$n"

# NAME before `--`.
out=$("$sqlock" run -- echo hi 2>&1)
check "run -- CMD without NAME exits 64" 64 $?
check "... and says NAME is missing" yes "$(grep -q 'needs NAME before --' <<<"$out" && echo yes)"
check "... without running CMD" no "$(grep -q '^hi$' <<<"$out" && echo yes || echo no)"
check "run NAME -- CMD still runs" hi "$("$sqlock" run nm -- echo hi)"
check "run NAME CMD -- ARG keeps the --" "-- x" "$("$sqlock" run nm echo -- x)"
check "elect -- CMD without NAME exits 64" 64 \
  "$("$sqlock" elect --value v -- echo hi >/dev/null 2>&1; echo $?)"

# --holder, and the holder in the message of a lock not obtained.
# CMD marks that it runs: a signal to sqlock then surely finds it (and ends it).
started() { for _ in $(seq 100); do [ -e "$1" ] && break; sleep 0.05; done; }
"$sqlock" run --holder "nightly backup on web1" held -- sh -c 'touch "$0"; exec sleep 10' "$dir/h1" &
started "$dir/h1"
check "--holder is the hold's description" "nightly backup on web1" \
  "$("$sqlock" list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["holder"])')"
out=$("$sqlock" run -w 300ms held -- true 2>&1)
check "not obtained: exit 75" 75 $?
check "not obtained: the wait with its unit and the holder" yes \
  "$(grep -Eq "^sqlock: lock 'held' not obtained within 300ms \(held by nightly backup on web1 since [0-9T:-]+Z\)$" <<<"$out" && echo yes)"
kill %1; wait
"$sqlock" run dflt -- sh -c 'touch "$0"; exec sleep 10' "$dir/h2" "postgresql://u:$pw@h/db" &
started "$dir/h2"
check "the default holder is HOST:PID:CMD ARGS, passwords masked" \
  "$(hostname):$!:sh -c touch \"\$0\"; exec sleep 10 $dir/h2 postgresql://u:***@h/db" \
  "$("$sqlock" list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["holder"])')"
out=$("$sqlock" run -n dflt -- true 2>&1)
check "-n: not obtained within 0s, by whom" yes \
  "$(grep -q "within 0s (held by $(hostname):$!:sh -c touch" <<<"$out" && echo yes)"
kill %1; wait

if [ "${SQLOCK_CLI_POSTGRES:-}" = 1 ] && [ -n "${SQLOCK_TEST_POSTGRES_URL:-}" ]; then
  sep='?'; [[ $SQLOCK_TEST_POSTGRES_URL == *\?* ]] && sep='&'
  out=$("$sqlock" list -u "${SQLOCK_TEST_POSTGRES_URL}${sep}schema=sqlock_absent_$RANDOM" 2>&1)
  check "a missing schema exits 78" 78 $?
  check "... and names sqlock migrate" yes "$(grep -q 'sqlock migrate' <<<"$out" && echo yes)"
elif [ "${SQLOCK_TEST_REQUIRE_ALL:-}" = 1 ]; then
  check "PostgreSQL built and SQLOCK_TEST_POSTGRES_URL set" yes no
fi
finish usage
