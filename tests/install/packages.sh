#!/usr/bin/env bash
# The Debian packages of this build (cmake/sqlock_cpack.cmake), from the build tree: built with
# cpack, installed with dpkg -i (as root; runs of this test are serialized by a lock file), a
# consumer built with find_package and with pkg-config against the installed packages and run,
# the installed command run with the SQLite module's package, no debug information in any of
# them (static libraries included), then all removed with dpkg -r and nothing of them left.
# Exit 77 (skipped) when not root, unless SQLOCK_TEST_REQUIRE_ALL=1.
# Usage: packages.sh BUILD_DIR "BACKENDS" [COMPILER_LAUNCHER]
set -euo pipefail
build=$(cd "$1" && pwd)
backends=$(echo "$2" | tr ";" " ")
launcher=${3:-}
if [ "$(id -u)" != 0 ]; then
  [ "${SQLOCK_TEST_REQUIRE_ALL:-}" != 1 ] ||
    { echo "FAIL: installing packages needs root"; exit 1; }
  echo "skip: installing packages needs root"
  exit 77
fi
test_name=packages
# shellcheck source=tests/install/common.sh
source "$(dirname "$0")/common.sh"
exec 9>/tmp/sqlock-packages-test.lock
flock -w 300 9 || fail "another run of this test holds /tmp/sqlock-packages-test.lock"
names=()
cleanup() {
  [ ${#names[@]} -eq 0 ] || dpkg -r "${names[@]}" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")

(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/debs") \
  >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log"; fail "cpack"; }
expected="libsqlock libsqlock-dev sqlock"
for b in $backends; do expected+=" libsqlock-backend-$b"; done
for d in "$tmp"/debs/*.deb; do names+=("$(dpkg-deb -f "$d" Package)"); done
[ "$(printf '%s\n' "${names[@]}" | sort | xargs)" = "$(echo "$expected" | tr ' ' '\n' | sort | xargs)" ] ||
  fail "packages built: ${names[*]}; expected: $expected"
for n in "${names[@]}"; do
  ! dpkg -s "$n" >/dev/null 2>&1 || { names=(); fail "$n is installed already; not touching it"; }
done
for p in "$prefix/bin/sqlock" "$prefix/include/sqlock"; do
  [ ! -e "$p" ] || { names=(); fail "$p exists (installed by hand?); not overwriting it"; }
done
dpkg-deb -f "$tmp"/debs/sqlock_*.deb Depends | grep -q "libsqlock (= " ||
  fail "sqlock does not depend on libsqlock of its version"
echo "ok: cpack built ${names[*]}"
# No debug information in any package: static libraries, shared libraries, modules, command.
for d in "$tmp"/debs/*.deb; do
  x=$tmp/contents/$(basename "$d" .deb)
  mkdir -p "$x"
  dpkg-deb -x "$d" "$x"
  while read -r f; do
    ! readelf -S "$f" 2>/dev/null | grep -q '\.debug_info' ||
      fail "$(basename "$d") ships debug information in ${f#"$x"}"
  done < <(find "$x" -type f \( -name '*.a' -o -name '*.so*' -o -perm -u+x \))
done
echo "ok: no debug information in the packages ($(du -ch "$tmp"/debs/*.deb | tail -1 | cut -f1) in all)"

dpkg -i "$tmp"/debs/*.deb >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -i"; }
echo "ok: dpkg -i installed them under $prefix"
[ -x "$prefix/bin/sqlock" ] || fail "no $prefix/bin/sqlock"
out=$(env -u SQLOCK_BACKEND_PATH "$prefix/bin/sqlock" run --url "sqlite:$tmp/a.db" packaged -- echo ran)
[ "$out" = ran ] || fail "the installed command printed '$out'"
echo "ok: the installed command runs on the SQLite module's package"

cmake -S "$src" -B "$tmp/consumer" -DSQLOCK_COMPONENTS=sqlite \
  ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher} >"$tmp/consumer.log" 2>&1 &&
  cmake --build "$tmp/consumer" -j2 >>"$tmp/consumer.log" 2>&1 ||
  { cat "$tmp/consumer.log"; fail "a find_package consumer of the packages does not build"; }
out=$(env -u SQLOCK_BACKEND_PATH "$tmp/consumer/component_sqlite" "$tmp/b.db" | tail -1)
[ "$out" = "fence 1" ] || fail "the find_package consumer printed '$out'"
out=$(env -u SQLOCK_BACKEND_PATH "$tmp/consumer/core_consumer" "$tmp/c.db")
[ "$out" = "fence 1" ] || fail "the sqlock::core consumer (SQLite module from its package) printed '$out'"
# shellcheck disable=SC2046
$launcher g++ -o "$tmp/pc" "$src/main.cpp" $(pkg-config --cflags --libs sqlock-core) ||
  fail "a pkg-config consumer of the packages does not build"
out=$(env -u SQLOCK_BACKEND_PATH "$tmp/pc" "$tmp/d.db")
[ "$out" = "fence 1" ] || fail "the pkg-config consumer printed '$out'"
echo "ok: consumers built against the installed packages run (find_package, pkg-config)"

dpkg -r "${names[@]}" >"$tmp/dpkg-r.log" 2>&1 || { cat "$tmp/dpkg-r.log"; fail "dpkg -r"; }
names=()
for p in "$prefix/bin/sqlock" "$prefix/include/sqlock"; do
  [ ! -e "$p" ] || fail "$p is left after dpkg -r"
done
[ -z "$(find "$prefix/lib" -path '*sqlock*' 2>/dev/null | head -1)" ] ||
  fail "files of sqlock left in $prefix/lib after dpkg -r"
echo "ok: dpkg -r removed them"
