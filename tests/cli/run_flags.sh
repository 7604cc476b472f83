#!/usr/bin/env bash
# `sqlock run` and `sqlock hold` flags: short forms, input that must be refused (exit 64), exit codes 127 and 77
# (the latter against PostgreSQL with a wrong password when that backend is built).
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

out=$("$sqlock" run -u "sqlite:$dir/other.db" -l 2s -w 1s short -- sh -c 'echo "$SQLOCK_NAME"')
check "-u -l -w run CMD" short "$out"
check "-u chose the store" yes "$([ -f "$dir/other.db" ] && echo yes)"

"$sqlock" run held -- sleep 30 &
holder=$!
for _ in $(seq 50); do "$sqlock" list | grep -q '^held ' && break; sleep 0.1; done
"$sqlock" run -n held -- true 2>/dev/null
check "-n on a held lock exits 75" 75 $?
"$sqlock" run -w 200ms held -- true 2>/dev/null
check "-w 200ms on a held lock exits 75" 75 $?
"$sqlock" run -n -E 3 held -- true 2>/dev/null
check "-E 3: a conflict exits 3" 3 $?
err=$("$sqlock" run -n -q held -- true 2>&1)
check "-q: a conflict exits 75 without a message" "75|" "$?|$err"
kill -TERM $holder
wait $holder

refused() {  # refused DESCRIPTION ARGS...: `sqlock run ARGS... x -- true` must exit 64
  local what=$1
  shift
  "$sqlock" run "$@" refused -- true 2>/dev/null
  check "$what exits 64" 64 $?
}
refused "--wait ''" --wait ''
refused "--wait ' 5s'" --wait ' 5s'
refused "--wait '5s '" --wait '5s '
refused "--mode ''" --mode ''
refused "--lease 1ms" --lease 1ms
refused "--lease 499ms" --lease 499ms
refused "--kill-after ''" --kill-after ''
refused "-n with --wait" -n --wait 1s
refused "-c ''" -c ''
refused "-E 256" -E 256
refused "-c with a command after --" -c true
"$sqlock" run nocmd 2>/dev/null
check "run without a command exits 64" 64 $?

out=$("$sqlock" run nodash sh -c 'echo "$0"' arg0)
check "no -- needed before CMD's own options" arg0 "$out"
mkdir "$dir/bin" && printf '#!/bin/sh\necho dash\n' >"$dir/bin/-dash" && chmod +x "$dir/bin/-dash"
out=$(PATH="$dir/bin:$PATH" "$sqlock" run dashed -- -dash)
check "run NAME -- -dash runs -dash" dash "$out"

out=$("$sqlock" run -c 'echo "$SQLOCK_NAME" | tr a-z A-Z' shellcmd)
check "-c runs its string through sh -c" SHELLCMD "$out"
"$sqlock" run --lease 500ms edge -- true
check "--lease 500ms is accepted" 0 $?

err=$("$sqlock" run nf -- no-such-command-xyz 2>&1 >/dev/null)
check "missing command exits 127" 127 "$("$sqlock" run nf -- no-such-command-xyz 2>/dev/null; echo $?)"
check "the 127 message names the command" "sqlock: no-such-command-xyz: command not found" "$err"
err=$("$sqlock" run -q nf -- no-such-command-xyz 2>&1 >/dev/null)
check "-q: 127 without a message" "127:" "$?:$err"

# CMD is started as posix_spawn() starts a program (clone + exec in sqlock's memory): a file that
# cannot be executed, and a script without #! (execvp() runs it through /bin/sh with a copy of
# its arguments on the child's stack, here 20,000 of them).
printf 'echo not run\n' >"$dir/plain.txt"
err=$("$sqlock" run nx -- "$dir/plain.txt" 2>&1 >/dev/null)
check "a file that is not executable exits 126" 126 "$?"
check "the 126 message says why" "sqlock: $dir/plain.txt: cannot execute: Permission denied" "$err"
printf 'echo "$#" "$1" "$SQLOCK_NAME"\n' >"$dir/noshebang"
chmod +x "$dir/noshebang"
out=$("$sqlock" run ns -- "$dir/noshebang" $(seq 20000))
check "a script without #! runs through sh with all its arguments" "20000 1 ns" "$out"

# hold: prints the fence, keeps the lock until a signal (exit 0) or a loss (exit 70).
"$sqlock" hold -l 2s kept >"$dir/hold.out" &
holder=$!
for _ in $(seq 100); do [ -s "$dir/hold.out" ] && break; sleep 0.1; done
fence=$(cat "$dir/hold.out")
case "$("$sqlock" list --json)" in *"\"name\":\"kept\""*"\"fence\":$fence,"* | *"\"fence\":$fence,"*"\"name\":\"kept\""*) r=yes ;; *) r=no ;; esac
check "hold prints the fence list shows ($fence)" yes "$r"
"$sqlock" run -n kept -- true 2>/dev/null
check "hold keeps the lock" 75 $?
"$sqlock" hold -n -E 9 kept 2>/dev/null
check "hold -n -E 9 on a held lock exits 9" 9 $?
kill -INT $holder
wait $holder
check "hold ends on SIGINT with 0" 0 $?
"$sqlock" run -n kept -- true
check "hold released the lock" 0 $?
"$sqlock" hold -l 1s dropped >"$dir/dropped.out" 2>/dev/null &
holder=$!
for _ in $(seq 100); do [ -s "$dir/dropped.out" ] && break; sleep 0.1; done
"$sqlock" release --force dropped >/dev/null
wait $holder
check "hold exits 70 on a lost lease" 70 $?
"$sqlock" hold --lease 1ms x 2>/dev/null
check "hold --lease 1ms exits 64" 64 $?

err=$("$sqlock" run -v verbose -- true 2>&1 >/dev/null)
for word in acquired released; do
  case "$err" in *"$word lock 'verbose'"*) r=yes ;; *) r=no ;; esac
  check "-v shows the $word event" yes "$r"
done
refused "-v with -q" -v -q

help=$("$sqlock" --help)
case "$help" in *"77 access refused"*) r=yes ;; *) r=no ;; esac
check "--help documents exit 77" yes "$r"

if [ "${SQLOCK_CLI_POSTGRES:-}" = 1 ]; then
  if [ -n "${SQLOCK_TEST_POSTGRES_URL:-}" ]; then
    # Same server and user, wrong password.
    bad=$(echo "$SQLOCK_TEST_POSTGRES_URL" | sed -E 's#^(postgresql://[^:/@]+)(:[^@]*)?@#\1:wrong-password-for-test@#')
    "$sqlock" run -u "$bad" authtest -- true 2>"$dir/auth.err"
    check "wrong password exits 77" 77 $?
    check "the password is not printed" no "$(grep -q wrong-password-for-test "$dir/auth.err" && echo yes || echo no)"
  elif [ "${SQLOCK_TEST_REQUIRE_ALL:-}" = 1 ]; then
    echo "FAIL: SQLOCK_TEST_POSTGRES_URL unset under SQLOCK_TEST_REQUIRE_ALL"
    fails=$((fails + 1))
  else
    echo "skip: exit 77 (SQLOCK_TEST_POSTGRES_URL unset)"
  fi
fi

finish "run-flag"
