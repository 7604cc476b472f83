#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with Debian's clang (ASan + UBSan, libFuzzer) in
# BUILD_DIR and runs each for SECONDS over its seed corpus (tests/fuzz/corpus/<target>/).
#   scripts/fuzz.sh [BUILD_DIR] [SECONDS] [CMAKE_ARGS...]   (defaults: build-fuzz, 20)
# Only the core and the backends with fuzz targets are built (-j2). Exit 77 when clang or the
# libFuzzer runtime (libclang-rt-14-dev) is missing, unless SQLOCK_TEST_REQUIRE_ALL=1.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build-fuzz}
seconds=${2:-20}
shift $(($# < 2 ? $# : 2))
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cxx" ] || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz.sh: clang++ or libFuzzer missing (install clang-14 libclang-rt-14-dev)" >&2
  [ "${SQLOCK_TEST_REQUIRE_ALL:-0}" = 1 ] && exit 1
  exit 77
fi
mkdir -p "$build"
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  "${launcher[@]}" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DSQLOCK_FUZZ=ON -DSQLOCK_BUILD_CLI=OFF -DSQLOCK_BUILD_BENCHMARKS=OFF -DSQLOCK_WITH_SOCI=OFF \
  -DSQLOCK_WITH_SQLITE=OFF -DSQLOCK_WITH_POSTGRES=OFF -DSQLOCK_WITH_ETCD=ON \
  -DSQLOCK_WITH_MYSQL=ON -DSQLOCK_WITH_REDIS=ON -DSQLOCK_WITH_ZOOKEEPER=ON "$@" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  exit 1
}
targets=$(ctest --test-dir "$build" -N -R '^fuzz\.' | sed -n 's/.*Test *#[0-9]*: fuzz\.//p')
# shellcheck disable=SC2086
cmake --build "$build" -j2 --target $targets
ctest --test-dir "$build" -R '^fuzz\.fuzz_' --output-on-failure -j1
