#!/usr/bin/env bash
# A shared build (BUILD_SHARED_LIBS=ON, core and SQLite only, no tests) of these sources,
# installed into its own prefix: versioned SONAMEs, only the public API exported, consumers
# (find_package, pkg-config) and the installed `sqlock` command work from that prefix with no
# environment help. The build directory stays under BUILD_DIR (install-shared/), so a later run
# rebuilds only what changed and a compiler cache keyed below a base directory hits.
# Usage: shared.sh BUILD_DIR SOURCE_DIR [COMPILER_LAUNCHER]
set -euo pipefail
build=$1
source_dir=$2
launcher=${3:-}
test_name=install-shared
# shellcheck source=tests/install/common.sh
source "$(dirname "$0")/common.sh"
sbuild=$build/install-shared
sprefix=$tmp/shared-prefix
off=()
for b in postgres mysql soci redis zookeeper etcd; do
  off+=("-DSQLOCK_WITH_${b^^}=OFF")
done
# What this checks (SONAMEs, exported symbols, consumers) does not depend on optimisation or
# debug information: -O1 without -g, and a unity build (a few sources per compiler run), keep
# this side build cheap beside the other tests.
cmake -S "$source_dir" -B "$sbuild" -DBUILD_SHARED_LIBS=ON -DSQLOCK_BUILD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" \
  -DCMAKE_UNITY_BUILD=ON \
  -DSQLOCK_BUILD_BENCHMARKS=OFF -DSQLOCK_WITH_PROMETHEUS=OFF "${off[@]}" \
  ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher} \
  >"$tmp/shared-configure.log" 2>&1 || { cat "$tmp/shared-configure.log"; fail "shared configure"; }
# What is installed only (the command brings the core, SQLite and its module), not the examples.
targets=(sqlock_cli)
[[ $(cmake --build "$sbuild" --target help) != *" sqlock_man"* ]] || targets+=(sqlock_man)
cmake --build "$sbuild" -j2 --target "${targets[@]}" >"$tmp/shared-build.log" 2>&1 ||
  { tail -50 "$tmp/shared-build.log"; fail "shared build"; }
cmake --install "$sbuild" --prefix "$sprefix" >/dev/null
slib=$(dirname "$(dirname "$(find "$sprefix" -name sqlock-core.pc)")")
for l in core sqlite; do
  so=$slib/libsqlock_$l.so
  soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = "libsqlock_$l.so.0.1" ] || fail "libsqlock_$l.so has SONAME '$soname'"
  [ -e "$slib/libsqlock_$l.so.0.1.0" ] || fail "libsqlock_$l.so.0.1.0 not installed"
done
exported=$(nm -DC --defined-only "$slib/libsqlock_core.so")
# Here-strings, not `echo | grep -q`: grep -q stops at the first match, and under pipefail the
# echo of a symbol list longer than a pipe's buffer then fails with SIGPIPE.
grep -q 'sqlock::connect(' <<<"$exported" || fail "sqlock::connect is not exported"
grep -q 'sqlock::url::parse(' <<<"$exported" || fail "sqlock::url::parse is not exported"
internal='sqlock::detail::client_impl::|the_registry|run_pending|module_dirs|sqlock::sql::'
! grep -qE "$internal" <<<"$exported" ||
  fail "internal symbols are exported: $(grep -E "$internal" <<<"$exported" | head -3)"
echo "ok: shared build: versioned SONAMEs, internal symbols hidden"

cmake -S "$src" -B "$tmp/shared-consumer" -DCMAKE_PREFIX_PATH="$sprefix" \
  -DSQLOCK_COMPONENTS=sqlite ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher} >/dev/null
cmake --build "$tmp/shared-consumer" >/dev/null 2>&1 || fail "consumer of the shared build"
env -u SQLOCK_BACKEND_PATH "$tmp/shared-consumer/core_consumer" "$tmp/f.db" | grep -qx "fence 1" ||
  fail "shared sqlock::core consumer did not find the SQLite module in its prefix"
"$tmp/shared-consumer/component_sqlite" "$tmp/g.db" | grep -qx "fence 1" ||
  fail "shared sqlock::sqlite consumer"
export PKG_CONFIG_PATH="$slib/pkgconfig"
# shellcheck disable=SC2046
g++ -o "$tmp/spc-consumer" "$src/main.cpp" $(pkg-config --cflags --libs sqlock-core) \
  -Wl,-rpath,"$slib" || fail "plain pkg-config on the shared build does not link"
env -u SQLOCK_BACKEND_PATH "$tmp/spc-consumer" "$tmp/h.db" | grep -qx "fence 1" ||
  fail "pkg-config consumer of the shared build"
env -u SQLOCK_BACKEND_PATH "$sprefix/bin/sqlock" run install-test -- true ||
  fail "the installed sqlock command of the shared build"
echo "ok: shared build works from its own prefix (find_package, pkg-config, the command)"
