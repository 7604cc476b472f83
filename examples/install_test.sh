# docs/install.md followed by a user: this build installed into a temporary prefix; the README's
# program (examples/lock.cpp) built with the page's CMakeLists.txt (examples/consumer) and with
# the page's pkg-config line; the installed command, man pages, bash and zsh completion.
# Usage: install_test.sh BUILD_DIR EXAMPLES_DIR [COMPILER_LAUNCHER]
set -uo pipefail
build=$1
examples=$2
launcher=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # check DESCRIPTION EXPECTED ACTUAL
  if [ "$2" == "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}
export XDG_STATE_HOME=$tmp/state

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null || { echo "FAIL: cmake --install"; exit 1; }
pc=$(find "$prefix" -name sqlock.pc)
libdir=$(dirname "$(dirname "$pc")")
# Installed into another prefix than configured: the modules' place is given (docs/install.md).
export SQLOCK_BACKEND_PATH=$libdir/sqlock/backends

mkdir "$tmp/app"
cp "$examples/consumer/CMakeLists.txt" "$examples/lock.cpp" "$tmp/app/"
cmake -S "$tmp/app" -B "$tmp/app-build" -DCMAKE_PREFIX_PATH="$prefix" \
  ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher} >"$tmp/log" 2>&1 &&
  cmake --build "$tmp/app-build" >>"$tmp/log" 2>&1 || cat "$tmp/log"
check "find_package(sqlock): the README's program runs" yes \
  "$([[ $("$tmp/app-build/app" "sqlite:$tmp/a.db") =~ ^fence\ [0-9]+$ ]] && echo yes)"

export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046
g++ -o "$tmp/app-pc" "$examples/lock.cpp" $(pkg-config --cflags --libs sqlock) || echo "(pkg-config build failed)"
check "pkg-config sqlock: the README's program runs" yes \
  "$([[ $("$tmp/app-pc" "sqlite:$tmp/b.db") =~ ^fence\ [0-9]+$ ]] && echo yes)"
# shellcheck disable=SC2046
g++ -o "$tmp/app-static" "$examples/lock.cpp" $(pkg-config --cflags --libs --static sqlock) ||
  echo "(pkg-config --static build failed)"
check "pkg-config --static sqlock: runs with no modules" yes \
  "$([[ $(SQLOCK_BACKEND_PATH=$tmp "$tmp/app-static" "sqlite:$tmp/c.db") =~ ^fence\ [0-9]+$ ]] && echo yes)"

check "the installed command runs a command under a lock" ok \
  "$("$prefix/bin/sqlock" run --url "sqlite:$tmp/d.db" installed -- echo ok)"
man1=$prefix/share/man/man1
if command -v help2man >/dev/null; then
  for s in "" $("$prefix/bin/sqlock" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1}'); do
    check "man page sqlock${s:+-$s}.1 installed" yes "$([ -s "$man1/sqlock${s:+-$s}.1" ] && echo yes)"
  done
  check "man -l reads the installed sqlock(1)" yes \
    "$(MANWIDTH=100 man -l "$man1/sqlock.1" 2>/dev/null | grep -q 'EXIT STATUS' && echo yes)"
elif [ "${SQLOCK_TEST_REQUIRE_ALL:-}" = 1 ]; then
  check "man pages built (help2man installed)" yes no
else
  echo "skip: man pages (help2man not installed)"
fi
completion=$prefix/share/bash-completion/completions/sqlock
check "bash completion installed" yes "$([ -s "$completion" ] && echo yes)"
# shellcheck source=/dev/null
source "$completion"
COMP_WORDS=("$prefix/bin/sqlock" "rel")
COMP_CWORD=1
_sqlock
check "the installed completion completes a subcommand" release "${COMPREPLY[*]}"
zsh_completion=$prefix/share/zsh/vendor-completions/_sqlock
check "zsh completion installed" yes "$([ -s "$zsh_completion" ] && echo yes)"
if command -v zsh >/dev/null; then  # compinit finds it on $fpath and binds it to sqlock
  bound=$(zsh -f -c 'fpath=("$1" $fpath); autoload -U compinit && compinit -u -D
                     print -r -- $_comps[sqlock]' zsh "${zsh_completion%/*}")
  check "compinit takes the installed zsh completion for sqlock" _sqlock "$bound"
elif [ "${SQLOCK_TEST_REQUIRE_ALL:-}" = 1 ]; then
  check "zsh installed" yes no
else
  echo "skip: zsh completion bound by compinit (zsh not installed)"
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "docs/install.md holds for this build"
