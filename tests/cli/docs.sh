# The shell completion and the man pages follow the program: completion offers its
# subcommands and options; every subcommand has a page that shows its options.
# Usage: docs.sh SQLOCK [MAN_DIR]
source "$(dirname "$0")/lib.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
man_dir=${2:-}

source "$src/scripts/completion/sqlock.bash"
complete_line() {  # the completions of the words given (the last one being completed)
  COMP_WORDS=("$sqlock" "$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  _sqlock
  echo "${COMPREPLY[*]}"
}
subs=$("$sqlock" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}')
check "subcommands listed by --help" "yes" "$([[ $subs == *run* && $subs == *list* ]] && echo yes)"
check "every subcommand offered" "$(echo $subs)" "$(complete_line "")"
check "an option of run" "--kill-after" "$(complete_line run --kill-)"
check "the command after --" "yes" "$(complete_line run name -- bas | grep -qw bash && echo yes)"
check "modes" "advisory" "$(complete_line run --mode adv)"
check "nothing odd for a lock name" "" "$(complete_line run or)"

# `sqlock SUB` builds SUB's parser alone, from main.cpp's list of names: every subcommand of
# --help must be in it.
for s in $subs; do
  check "sqlock $s --help" 0 "$("$sqlock" "$s" --help >/dev/null 2>&1; echo $?)"
done
out=$("$sqlock" lsit 2>&1); code=$?
check "a mistyped command is refused (64)" 64 "$code"
check "the nearest command is suggested" yes "$(grep -q "did you mean 'list'" <<<"$out" && echo yes)"
version=$(sed -nE 's/^project\(sqlock VERSION ([0-9.]+).*/\1/p' "$src/CMakeLists.txt")
check "--version gives the build's version" "sqlock $version" "$("$sqlock" --version | head -1)"
check "--version lists the backends" yes \
  "$("$sqlock" --version | grep -q '^backends:.* sqlite' && echo yes)"

if [ -n "$man_dir" ]; then
  for s in "" $subs; do
    page=$man_dir/sqlock${s:+-$s}.1
    check "page ${page##*/} exists" "yes" "$([ -s "$page" ] && echo yes)"
  done
  out=$(MANWIDTH=100 man -l "$man_dir/sqlock-run.1" 2>/dev/null)
  check "run's page shows --wait" "yes" "$(grep -q -- '--wait' <<<"$out" && echo yes)"
  check "run's page names the command" "yes" "$(grep -q 'sqlock run \[OPTIONS\]' <<<"$out" && echo yes)"
  check "no build path in the pages" "" "$(grep -l "$sqlock" "$man_dir"/*.1)"
  check "exit status section" "yes" "$(grep -q 'EXIT STATUS' <<<"$out" && echo yes)"
elif [ "${SQLOCK_TEST_REQUIRE_ALL:-}" = 1 ]; then
  check "man pages built (help2man installed)" "yes" "no"
fi
finish docs
