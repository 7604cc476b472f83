#!/usr/bin/env bash
# What an installed sqlock promises its consumers, proven on two installations:
#  1. the build under test (static libraries), installed into a temporary prefix:
#     find_package(sqlock REQUIRED COMPONENTS <every backend>) works; sqlock::sqlock links and
#     runs; each component's target links alone and registers its backend; sqlock::core alone
#     loads backends as modules; the consumer project sets no C++ standard (the targets carry
#     cxx_std_20); plain `pkg-config --libs sqlock` links, and so does `--static`.
#  2. a shared build (BUILD_SHARED_LIBS=ON, core and SQLite only) of the same sources installed
#     into another prefix: versioned SONAMEs, only the public API exported, consumers and the
#     installed `sqlock` command work from that prefix with no environment help.
# Usage: run.sh BUILD_DIR "BACKENDS" SOURCE_DIR [COMPILER_LAUNCHER]
set -euo pipefail
build=$1
backends=$(echo "$2" | tr ";" " ")  # a CMake list or words
source_dir=$3
launcher=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
src=$here/consumer
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
export XDG_STATE_HOME=$tmp/state
mkdir -p "$tmp/empty"

# ---- 1. the build under test ----
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(dirname "$(find "$prefix" -name sqlock.pc)")")  # LIBDIR, absolute
[ -z "$(find "$prefix/include" -name sql_engine.hpp -o -name dialect.hpp)" ] ||
  fail "engine/dialect headers are installed"
# Installed headers include only installed headers.
while read -r inc; do
  [ -f "$prefix/include/$inc" ] || fail "an installed header includes $inc, which is not installed"
done < <(grep -rhoE '#include "sqlock/[^"]+"' "$prefix/include" | sed -E 's/.*"(.*)"/\1/' | sort -u)
echo "ok: only public headers installed"

components=$(echo "$backends" | tr ' ' ';')
cmake -S "$src" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DSQLOCK_COMPONENTS="$components" ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher} >/dev/null
cmake --build "$tmp/cmake-build" --verbose >"$tmp/consumer-build.log" 2>&1 ||
  { cat "$tmp/consumer-build.log"; fail "find_package consumer does not build"; }
grep -q -- '-std=[a-z+]*20' "$tmp/consumer-build.log" || fail "targets do not carry cxx_std_20"
out=$(SQLOCK_BACKEND_PATH=$tmp/empty "$tmp/cmake-build/consumer" "$tmp/a.db")
[ "$out" = "fence 1" ] || fail "sqlock::sqlock consumer printed '$out'"
echo "ok: find_package(sqlock COMPONENTS $backends), sqlock::sqlock, C++20 from the targets"
for c in $backends; do
  out=$(SQLOCK_BACKEND_PATH=$tmp/empty "$tmp/cmake-build/component_$c")
  [ -n "$(echo "$out" | grep -vx memory)" ] || fail "sqlock::$c alone registers nothing: '$out'"
done
out=$(SQLOCK_BACKEND_PATH=$tmp/empty "$tmp/cmake-build/component_sqlite" "$tmp/c.db" | tail -1)
[ "$out" = "fence 1" ] || fail "sqlock::sqlite alone printed '$out'"
echo "ok: each component links alone and registers its backend"
out=$(SQLOCK_BACKEND_PATH=$libdir/sqlock/backends "$tmp/cmake-build/core_consumer" "$tmp/d.db")
[ "$out" = "fence 1" ] || fail "sqlock::core consumer with the SQLite module printed '$out'"
echo "ok: sqlock::core alone loads the SQLite backend module"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
g++ -o "$tmp/pc-consumer" "$src/main.cpp" $(pkg-config --cflags --libs sqlock) ||
  fail "plain pkg-config --libs sqlock does not link"
out=$(SQLOCK_BACKEND_PATH=$libdir/sqlock/backends "$tmp/pc-consumer" "$tmp/b.db")
[ "$out" = "fence 1" ] || fail "pkg-config consumer printed '$out'"
# shellcheck disable=SC2046
g++ -o "$tmp/pc-static" "$src/main.cpp" $(pkg-config --cflags --libs --static sqlock) ||
  fail "pkg-config --static does not link"
out=$(SQLOCK_BACKEND_PATH=$tmp/empty "$tmp/pc-static" "$tmp/e.db")
[ "$out" = "fence 1" ] || fail "pkg-config --static consumer printed '$out'"
echo "ok: pkg-config consumers (plain: modules; --static: every backend linked)"

# ---- 2. a shared build, installed into its own prefix ----
sbuild=$tmp/shared-build
sprefix=$tmp/shared-prefix
off=()
for b in postgres mysql soci redis zookeeper etcd; do
  off+=("-DSQLOCK_WITH_${b^^}=OFF")
done
cmake -S "$source_dir" -B "$sbuild" -DBUILD_SHARED_LIBS=ON -DSQLOCK_BUILD_TESTS=OFF \
  -DSQLOCK_BUILD_BENCHMARKS=OFF "${off[@]}" ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher} \
  >"$tmp/shared-configure.log" 2>&1 || { cat "$tmp/shared-configure.log"; fail "shared configure"; }
cmake --build "$sbuild" -j2 >"$tmp/shared-build.log" 2>&1 ||
  { tail -50 "$tmp/shared-build.log"; fail "shared build"; }
cmake --install "$sbuild" --prefix "$sprefix" >/dev/null
slib=$(dirname "$(dirname "$(find "$sprefix" -name sqlock.pc)")")
for l in core sqlite; do
  so=$slib/libsqlock_$l.so
  soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = "libsqlock_$l.so.0.1" ] || fail "libsqlock_$l.so has SONAME '$soname'"
  [ -e "$slib/libsqlock_$l.so.0.1.0" ] || fail "libsqlock_$l.so.0.1.0 not installed"
done
exported=$(nm -DC --defined-only "$slib/libsqlock_core.so")
echo "$exported" | grep -q 'sqlock::connect(' || fail "sqlock::connect is not exported"
echo "$exported" | grep -q 'sqlock::url::parse(' || fail "sqlock::url::parse is not exported"
internal='sqlock::detail::client_impl::|the_registry|run_pending|module_dirs|sqlock::sql::'
! echo "$exported" | grep -qE "$internal" ||
  fail "internal symbols are exported: $(echo "$exported" | grep -E "$internal" | head -3)"
echo "ok: shared build: versioned SONAMEs, internal symbols hidden"

cmake -S "$src" -B "$tmp/shared-consumer" -DCMAKE_PREFIX_PATH="$sprefix" \
  -DSQLOCK_COMPONENTS=sqlite >/dev/null
cmake --build "$tmp/shared-consumer" >/dev/null 2>&1 || fail "consumer of the shared build"
env -u SQLOCK_BACKEND_PATH "$tmp/shared-consumer/core_consumer" "$tmp/f.db" | grep -qx "fence 1" ||
  fail "shared sqlock::core consumer did not find the SQLite module in its prefix"
"$tmp/shared-consumer/component_sqlite" "$tmp/g.db" | grep -qx "fence 1" ||
  fail "shared sqlock::sqlite consumer"
export PKG_CONFIG_PATH="$slib/pkgconfig"
# shellcheck disable=SC2046
g++ -o "$tmp/spc-consumer" "$src/main.cpp" $(pkg-config --cflags --libs sqlock) \
  -Wl,-rpath,"$slib" || fail "plain pkg-config on the shared build does not link"
env -u SQLOCK_BACKEND_PATH "$tmp/spc-consumer" "$tmp/h.db" | grep -qx "fence 1" ||
  fail "pkg-config consumer of the shared build"
env -u SQLOCK_BACKEND_PATH "$sprefix/bin/sqlock" run install-test -- true ||
  fail "the installed sqlock command of the shared build"
echo "ok: shared build works from its own prefix (find_package, pkg-config, the command)"
