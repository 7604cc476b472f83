#!/usr/bin/env bash
# Builds and runs the unit tests and the conformance suites (memory and SQLite; PostgreSQL and
# Redis when their URLs are set) under sanitizers, each in its own build directory with only
# the backends it needs (-j2), and fails on any report:
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (leaks included), build-asan/
#   tsan  ThreadSanitizer, build-tsan/
#   scripts/sanitize.sh [asan|tsan|all] [BUILD_ROOT]
# CI runs asan and tsan as the CTest tests sanitize.asan and sanitize.tsan.
#   (defaults: all, the source directory)
# Server URLs come from the environment (source $SQLOCK_RUN_DIR/env.sh). Prints the time each
# build and run took.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
which=${1:-all}
root=${2:-$src}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# Test programs and the gtest filter each runs under a sanitizer. The conformance case that
# fork()s worker processes out of a multithreaded test is left out: a child of a multithreaded
# parent may only call async-signal-safe functions, and GCC 12's ASan/TSan runtimes do not lock
# their allocators around fork(), so the child hangs on an allocator lock another thread held
# (seen in libpq's connect). Cross-process exclusion is the chaos suite's job (tests/chaos).
nofork="*threads_and_processes_keep_an_exact_counter*"
# TSan also refuses to start a thread in such a child (die_after_fork): the shared-lock and
# semaphore cases that fork workers are left out under TSan only (ASan runs them).
nofork_tsan="$nofork:*_across_processes:*_across_threads_and_processes"
runs=("sqlock_unit_tests:*" "sqlock_conformance_local:*")
backends=(-DSQLOCK_WITH_SQLITE=ON -DSQLOCK_WITH_MYSQL=OFF -DSQLOCK_WITH_SOCI=OFF
  -DSQLOCK_WITH_ZOOKEEPER=OFF -DSQLOCK_WITH_ETCD=OFF)
missing=0
if [ -n "${SQLOCK_TEST_POSTGRES_URL:-}" ]; then
  runs+=("sqlock_postgres_tests:postgres/conformance*")
  backends+=(-DSQLOCK_WITH_POSTGRES=ON)
else
  echo "sanitize.sh: SQLOCK_TEST_POSTGRES_URL unset: PostgreSQL conformance not run" >&2
  backends+=(-DSQLOCK_WITH_POSTGRES=OFF)
  missing=1
fi
if [ -n "${SQLOCK_TEST_REDIS_URL:-}" ]; then
  runs+=("sqlock_redis_tests:redis/conformance*")
  backends+=(-DSQLOCK_WITH_REDIS=ON)
else
  echo "sanitize.sh: SQLOCK_TEST_REDIS_URL unset: Redis conformance not run" >&2
  backends+=(-DSQLOCK_WITH_REDIS=OFF)
  missing=1
fi
if [ "$missing" = 1 ] && [ "${SQLOCK_TEST_REQUIRE_ALL:-0}" = 1 ]; then
  echo "sanitize.sh: SQLOCK_TEST_REQUIRE_ALL=1 and a server URL is unset" >&2
  exit 1
fi

one() {
  local name=$1 flags=$2 build="$root/build-$1" t0 t1 targets=() run prog filter failed=0
  t0=$(date +%s)
  mkdir -p "$build"
  cmake -S "$src" -B "$build" "${launcher[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="$flags -fno-omit-frame-pointer" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DSQLOCK_WERROR=ON \
    -DSQLOCK_BUILD_CLI=OFF -DSQLOCK_BUILD_BENCHMARKS=OFF "${backends[@]}" >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log" >&2; return 1; }
  for run in "${runs[@]}"; do targets+=("${run%%:*}"); done
  cmake --build "$build" -j2 --target "${targets[@]}" >"$build/build.log" 2>&1 ||
    { tail -40 "$build/build.log" >&2; return 1; }
  t1=$(date +%s)
  echo "sanitize.sh: $name build took $((t1 - t0)) s" >&2
  for run in "${runs[@]}"; do
    prog=${run%%:*}
    filter="${run#*:}-$nofork"
    case "$name" in tsan*) filter="${run#*:}-$nofork_tsan" ;; esac
    prog=$(find "$build/tests" -type f -name "$prog" -perm -u+x | head -1)
    if ! "$prog" --gtest_filter="$filter" >"$build/$(basename "$prog").log" 2>&1; then
      echo "sanitize.sh: $name: $(basename "$prog") failed (log: $build/$(basename "$prog").log)" >&2
      grep -m5 -E "ERROR: (Address|Thread|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error|FAILED" \
        "$build/$(basename "$prog").log" >&2 || true
      failed=1
    fi
  done
  echo "sanitize.sh: $name tests took $(($(date +%s) - t1)) s" >&2
  return $failed
}

export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1
export LSAN_OPTIONS=suppressions=$src/scripts/lsan.supp:print_suppressions=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
status=0
case "$which" in
  asan | all) one asan "-fsanitize=address,undefined -fno-sanitize-recover=all" || status=1 ;;&
  tsan | all) one tsan "-fsanitize=thread" || status=1 ;;
  asan) ;;
  *) echo "usage: sanitize.sh [asan|tsan|all] [BUILD_ROOT]" >&2; exit 64 ;;
esac
exit $status
