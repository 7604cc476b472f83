#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with Debian's clang (ASan + UBSan, libFuzzer) and
# runs each for SECONDS over its seed corpus (tests/fuzz/corpus/<target>/).
#   scripts/fuzz.sh [BUILD_DIR] [SECONDS]        build, then run every target (defaults:
#                                                build-fuzz, 20)
#   scripts/fuzz.sh build BUILD_DIR              build only
#   scripts/fuzz.sh run BUILD_DIR TARGET SECONDS run one target (after build)
# CI builds in the CTest test fuzz.build (at the lowest CPU priority, beside the other tests)
# and runs each target as fuzz.<target>. Only the core and the backends with fuzz targets are
# built (-j2, a unity build: a few sources per compiler run). Exit 77 when clang or the
# libFuzzer runtime (libclang-rt-14-dev) is missing, unless SQLOCK_TEST_REQUIRE_ALL=1.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cxx" ] || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz.sh: clang++ or libFuzzer missing (install clang-14 libclang-rt-14-dev)" >&2
  [ "${SQLOCK_TEST_REQUIRE_ALL:-0}" = 1 ] && exit 1
  exit 77
fi

build() {
  local dir=$1 flags launcher=() targets t0
  flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  t0=$(date +%s)
  mkdir -p "$dir"
  cmake -S "$src" -B "$dir" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_UNITY_BUILD=ON \
    "${launcher[@]}" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DSQLOCK_FUZZ=ON -DSQLOCK_BUILD_CLI=OFF -DSQLOCK_BUILD_BENCHMARKS=OFF -DSQLOCK_WITH_SOCI=OFF \
    -DSQLOCK_WITH_SQLITE=OFF -DSQLOCK_WITH_POSTGRES=OFF -DSQLOCK_WITH_ETCD=ON \
    -DSQLOCK_WITH_MYSQL=ON -DSQLOCK_WITH_REDIS=ON -DSQLOCK_WITH_ZOOKEEPER=ON >"$dir/configure.log" 2>&1 || {
    cat "$dir/configure.log" >&2
    return 1
  }
  targets=$(ctest --test-dir "$dir" -N -R '^fuzz\.' | sed -n 's/.*Test *#[0-9]*: fuzz\.//p')
  # shellcheck disable=SC2086
  cmake --build "$dir" -j2 --target $targets >"$dir/build.log" 2>&1 || {
    tail -40 "$dir/build.log" >&2
    return 1
  }
  echo "fuzz.sh: build took $(($(date +%s) - t0)) s" >&2
}

# One target over a working corpus in the build directory, seeded from the source tree's.
run() {
  local dir=$1 target=$2 seconds=$3 exe work
  exe="$dir/tests/fuzz/$target"
  [ -x "$exe" ] || { echo "fuzz.sh: $target is not built in $dir (run: fuzz.sh build $dir)" >&2; return 1; }
  work="$dir/tests/fuzz/corpus/$target"
  mkdir -p "$work"
  "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 "$work" \
    "$src/tests/fuzz/corpus/$target"
}

case "${1:-}" in
  build) [ $# = 2 ] || { echo "usage: fuzz.sh build BUILD_DIR" >&2; exit 64; }
    build "$2" ;;
  run) [ $# = 4 ] || { echo "usage: fuzz.sh run BUILD_DIR TARGET SECONDS" >&2; exit 64; }
    run "$2" "$3" "$4" ;;
  *) dir=${1:-$src/build-fuzz}
    seconds=${2:-20}
    build "$dir"
    ctest --test-dir "$dir" -R '^fuzz\.fuzz_' --output-on-failure -j1 ;;
esac
