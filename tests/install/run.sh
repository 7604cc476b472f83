#!/usr/bin/env bash
# What an installed sqlock promises its consumers, on the build under test installed into a
# temporary prefix (cmake --install: nothing is built again but the small consumers):
#  - only public headers are installed; the exported targets name no build-tree paths and no
#    empty generator expressions;
#  - find_package(sqlock REQUIRED COMPONENTS <every backend>): sqlock::sqlock links and runs;
#    each component's target links alone and registers its backend; sqlock::core alone loads
#    backends as modules; the consumer sets no C++ standard (the targets carry cxx_std_20);
#  - with every other backend's dependencies out of reach (a find root holding only sqlock and
#    SQLite, PKG_CONFIG_LIBDIR holding only sqlock's and sqlite3's .pc files):
#    find_package(sqlock COMPONENTS sqlite) and COMPONENTS core work, pkg-config sqlock-core
#    and sqlock-sqlite link and run, sqlock-core carries no vendor include path; asking for
#    the postgres component fails naming libpqxx; a misspelt component lists the components;
#  - pkg-config sqlock (the umbrella: core and every backend) links and runs;
#  - find_package(sqlock COMPONENTS asio) (when made): sqlock::asio builds and runs.
# Usage: run.sh BUILD_DIR "BACKENDS" [COMPILER_LAUNCHER]
set -euo pipefail
build=$1
backends=$(echo "$2" | tr ";" " ")  # a CMake list or words
launcher=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
test_name=install-test
# shellcheck source=tests/install/common.sh
source "$here/common.sh"
mkdir -p "$tmp/empty"
launch=${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher}
cxx() { $launcher g++ "$@"; }  # the pkg-config consumers, through the same launcher

# The find root of the restricted consumers: the installed sqlock (at /opt/sqlock inside it)
# and SQLite's header and library, nothing else.
root=$tmp/root
prefix=$root/opt/sqlock
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(dirname "$(find "$prefix" -name sqlock-core.pc)")")  # LIBDIR, absolute
[ -z "$(find "$prefix/include" -name sql_engine.hpp -o -name dialect.hpp)" ] ||
  fail "engine/dialect headers are installed"
# Installed headers include only installed headers.
while read -r inc; do
  [ -f "$prefix/include/$inc" ] || fail "an installed header includes $inc, which is not installed"
done < <(grep -rhoE '#include "sqlock/[^"]+"' "$prefix/include" | sed -E 's/.*"(.*)"/\1/' | sort -u)
echo "ok: only public headers installed"
targets=$(cat "$libdir"/cmake/sqlock/*-targets.cmake)
! grep -q '\$<LINK_ONLY:>' <<<"$targets" || fail "an exported target carries \$<LINK_ONLY:>"
! grep -qF "$(cd "$build" && pwd)" <<<"$targets" || fail "an exported target names the build tree"
! grep -qF "$(cd "$here/../.." && pwd)/src" <<<"$targets" || fail "an exported target names src/"
echo "ok: exported targets: no empty \$<LINK_ONLY:>, no build or source paths"

# ---- find_package with every backend ----
components=$(echo "$backends" | tr ' ' ';')
cmake -S "$src" -B "$tmp/all" -DCMAKE_PREFIX_PATH="$prefix" -DSQLOCK_COMPONENTS="$components" \
  $launch >/dev/null
cmake --build "$tmp/all" -j2 --verbose >"$tmp/all.log" 2>&1 ||
  { cat "$tmp/all.log"; fail "find_package consumer does not build"; }
grep -q -- '-std=[a-z+]*20' "$tmp/all.log" || fail "targets do not carry cxx_std_20"
out=$(SQLOCK_BACKEND_PATH=$tmp/empty "$tmp/all/consumer" "$tmp/a.db")
[ "$out" = "fence 1" ] || fail "sqlock::sqlock consumer printed '$out'"
echo "ok: find_package(sqlock COMPONENTS $backends), sqlock::sqlock, C++20 from the targets"
for c in $backends; do
  out=$(SQLOCK_BACKEND_PATH=$tmp/empty "$tmp/all/component_$c")
  [ -n "$(echo "$out" | grep -vx memory)" ] || fail "sqlock::$c alone registers nothing: '$out'"
done
out=$(SQLOCK_BACKEND_PATH=$tmp/empty "$tmp/all/component_sqlite" "$tmp/c.db" | tail -1)
[ "$out" = "fence 1" ] || fail "sqlock::sqlite alone printed '$out'"
echo "ok: each component links alone and registers its backend"
out=$(SQLOCK_BACKEND_PATH=$libdir/sqlock/backends "$tmp/all/core_consumer" "$tmp/d.db")
[ "$out" = "fence 1" ] || fail "sqlock::core consumer with the SQLite module printed '$out'"
echo "ok: sqlock::core alone loads the SQLite backend module"

# ---- the header-only Asio component, when this build made it ----
if [ -f "$libdir/cmake/sqlock/sqlock-asio-targets.cmake" ]; then
  cmake -S "$src" -B "$tmp/asio" -DCMAKE_PREFIX_PATH="$prefix" -DSQLOCK_COMPONENTS=asio \
    $launch >/dev/null
  cmake --build "$tmp/asio" -j2 --target asio_consumer >"$tmp/asio.log" 2>&1 ||
    { cat "$tmp/asio.log"; fail "the sqlock::asio consumer does not build"; }
  out=$("$tmp/asio/asio_consumer")
  [ "$out" = "held by use_future" ] || fail "the sqlock::asio consumer printed '$out'"
  echo "ok: find_package(sqlock COMPONENTS asio), sqlock::asio"
fi

# ---- the other backends' dependencies out of reach ----
arch=$(gcc -print-multiarch)
sqlite_h=$(echo '#include <sqlite3.h>' | g++ -M -x c++ - | grep -o '[^ ]*/sqlite3\.h' | head -1)
sqlite_so=$(g++ -print-file-name=libsqlite3.so)
mkdir -p "$root/usr/include" "$root/usr/lib/$arch" "$tmp/pc"
ln -s "$sqlite_h" "$root/usr/include/sqlite3.h"
ln -s "$sqlite_so" "$root/usr/lib/$arch/libsqlite3.so"
cp "$(pkg-config --variable=pcfiledir sqlite3)/sqlite3.pc" "$tmp/pc/"
export PKG_CONFIG_LIBDIR=$libdir/pkgconfig:$tmp/pc
unset PKG_CONFIG_PATH
restricted() { # restricted BUILD_DIR COMPONENTS: configure the consumer in the find root
  cmake -S "$src" -B "$1" -DCMAKE_FIND_ROOT_PATH="$root" -DCMAKE_PREFIX_PATH=/opt/sqlock \
    -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY \
    -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=NEVER \
    -DSQLOCK_COMPONENTS="$2" $launch
}
restricted "$tmp/only-sqlite" sqlite >"$tmp/only-sqlite.log" 2>&1 ||
  { cat "$tmp/only-sqlite.log"; fail "find_package(sqlock COMPONENTS sqlite) needs more than SQLite"; }
cmake --build "$tmp/only-sqlite" -j2 >>"$tmp/only-sqlite.log" 2>&1 ||
  { cat "$tmp/only-sqlite.log"; fail "the SQLite-only consumer does not build"; }
out=$(SQLOCK_BACKEND_PATH=$tmp/empty "$tmp/only-sqlite/component_sqlite" "$tmp/e.db" | tail -1)
[ "$out" = "fence 1" ] || fail "the SQLite-only component consumer printed '$out'"
out=$(SQLOCK_BACKEND_PATH=$tmp/empty "$tmp/only-sqlite/consumer" "$tmp/f.db")
[ "$out" = "fence 1" ] || fail "the SQLite-only sqlock::sqlock consumer printed '$out'"
echo "ok: find_package(sqlock COMPONENTS sqlite) with only SQLite and sqlock in reach"
restricted "$tmp/only-core" core >"$tmp/only-core.log" 2>&1 ||
  { cat "$tmp/only-core.log"; fail "find_package(sqlock COMPONENTS core) needs more than the core"; }
echo "ok: find_package(sqlock COMPONENTS core) with only sqlock in reach"
if [[ " $backends " == *" postgres "* ]]; then
  ! restricted "$tmp/no-pg" postgres >"$tmp/no-pg.log" 2>&1 || fail "libpqxx is in reach"
  grep -q "component postgres needs.*libpqxx" "$tmp/no-pg.log" ||
    { cat "$tmp/no-pg.log"; fail "a component with missing dependencies does not name them"; }
  echo "ok: COMPONENTS postgres without libpqxx fails naming it"
fi
! restricted "$tmp/typo" "sqlite;sqlte" >"$tmp/typo.log" 2>&1 || fail "a misspelt component passed"
# CMake wraps the message: read it as one line.
tr -s '\n ' '  ' <"$tmp/typo.log" |
  grep -Eq "no component sqlte in this sqlock; its components: core, (.*, )?sqlite(,| |$)" ||
  { cat "$tmp/typo.log"; fail "a misspelt component does not list the available ones"; }
echo "ok: a misspelt component lists the components"

read -r -a cflags < <(pkg-config --cflags sqlock-core)
[ ${#cflags[@]} = 2 ] && [ "$(realpath "${cflags[0]#-I}")" = "$prefix/include" ] &&
  [ "${cflags[1]}" = -std=c++20 ] || fail "sqlock-core's cflags: '${cflags[*]}'"
# shellcheck disable=SC2046
cxx -o "$tmp/pc-core" "$src/main.cpp" $(pkg-config --cflags --libs sqlock-core) ||
  fail "pkg-config sqlock-core does not link"
out=$(SQLOCK_BACKEND_PATH=$libdir/sqlock/backends "$tmp/pc-core" "$tmp/g.db")
[ "$out" = "fence 1" ] || fail "pkg-config sqlock-core consumer printed '$out'"
# shellcheck disable=SC2046
cxx -o "$tmp/pc-sqlite" "$src/component.cpp" $(pkg-config --cflags --libs sqlock-sqlite) ||
  fail "pkg-config sqlock-sqlite does not link"
out=$(SQLOCK_BACKEND_PATH=$tmp/empty "$tmp/pc-sqlite" "$tmp/h.db" | tail -1)
[ "$out" = "fence 1" ] || fail "pkg-config sqlock-sqlite consumer printed '$out'"
if [[ " $backends " == *" postgres "* ]]; then
  ! pkg-config --exists sqlock-postgres 2>/dev/null || fail "libpqxx.pc is in reach"
fi
echo "ok: pkg-config sqlock-core and sqlock-sqlite with only sqlock's and sqlite3's .pc files"

# ---- the umbrella sqlock.pc, every dependency in reach ----
export PKG_CONFIG_PATH=$libdir/pkgconfig
unset PKG_CONFIG_LIBDIR
requires=$(pkg-config --print-requires sqlock | tr '\n' ' ')
expected="sqlock-core $(for c in $backends; do printf 'sqlock-%s ' "$c"; done)"
[ "$(echo "$requires" | tr ' ' '\n' | sort | xargs)" = "$(echo "$expected" | tr ' ' '\n' | sort | xargs)" ] ||
  fail "sqlock.pc requires '$requires', expected '$expected'"
# shellcheck disable=SC2046
cxx -o "$tmp/pc-all" "$src/main.cpp" $(pkg-config --cflags --libs sqlock) ||
  fail "pkg-config sqlock does not link"
out=$(SQLOCK_BACKEND_PATH=$tmp/empty "$tmp/pc-all" "$tmp/i.db")
[ "$out" = "fence 1" ] || fail "pkg-config sqlock consumer printed '$out'"
echo "ok: pkg-config sqlock: the core and every backend of this build linked"
