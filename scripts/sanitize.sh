#!/usr/bin/env bash
# Builds and runs the unit tests and the conformance suites (memory and SQLite; PostgreSQL and
# Redis when their URLs are set) under sanitizers, each profile in its own build directory with
# only the backends it needs (-j2), and fails on any report:
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (leaks included), BUILD_ROOT/build-asan/
#   tsan  ThreadSanitizer, BUILD_ROOT/build-tsan/
#
#   scripts/sanitize.sh [asan|tsan|all] [BUILD_ROOT]     build, then run every program
#   scripts/sanitize.sh build PROFILE BUILD_ROOT          build only
#   scripts/sanitize.sh run PROFILE BUILD_ROOT PROGRAM    run one program (after build)
# (defaults: all, the source directory). CI builds each profile in the CTest test
# sanitize.PROFILE.build (at the lowest CPU priority, beside the other tests) and runs each
# program as sanitize.PROFILE.PROGRAM. Server URLs come from the environment (source
# $SQLOCK_RUN_DIR/env.sh); a program whose server URL is unset exits 77 (skipped) unless
# SQLOCK_TEST_REQUIRE_ALL=1. Prints the time each build and run took.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# The programs and the gtest filter each runs under a sanitizer, and the server URL each needs.
# The conformance cases that fork() worker processes out of a multithreaded test are left out: a
# child of a multithreaded parent may only call async-signal-safe functions, and GCC 12's
# ASan/TSan runtimes do not lock their allocators around fork(), so the child hangs on an
# allocator lock another thread held (seen in libpq's connect and OpenSSL's CRYPTO_zalloc); TSan
# also refuses to start a thread in such a child (die_after_fork). The normal build runs them,
# and cross-process exclusion is also the chaos suite's job (tests/chaos).
nofork="*threads_and_processes_keep_an_exact_counter*:*_across_processes*:*_across_threads_and_processes*"
# Two conformance cases that only time a wait that gives up (400 ms each, in every store variant)
# are left out too: the normal build's runs check their timing, and the give-up path they take
# runs here in other cases (works_with_standard_lock_types, permits_agree_expire_alone_and_time_out).
timing_only="*try_lock_for_gives_up_at_its_deadline*:*shared_timeouts_end_on_time*"
programs=(sqlock_unit_tests sqlock_conformance_local sqlock_postgres_conformance_tests sqlock_redis_conformance_tests)
# The store variants each program runs: every one, or with SQLOCK_SANITIZE_VARIANTS=short (the
# CTest runs) one variant per code path the variants take through the client: the SQL engine's
# row modes with and without compare-and-set (PostgreSQL's; SQLite's pessimistic one) and
# PostgreSQL's advisory sessions with the background release sender; one Redis server and
# Redlock (with the sender); the memory store. The variants left out (the peers' layouts, SQLite
# optimistic, advisory mode and Redlock with releases that wait, one Redis server with the sender)
# differ in their SQL and keys or only combine paths taken here.
variants_of() {
  if [ "${SQLOCK_SANITIZE_VARIANTS:-all}" != short ]; then echo "*"; return; fi
  case "$1" in
    sqlock_postgres_conformance_tests) echo "pessimistic optimistic_app_role advisory_async_release" ;;
    sqlock_redis_conformance_tests) echo "single redlock_async_release" ;;
    sqlock_conformance_local) echo "memory sqlite_pessimistic" ;;
    *) echo "*" ;;
  esac
}
filter_of() {
  local prefix v variants patterns=()
  case "$1" in
    sqlock_postgres_conformance_tests) prefix=postgres/conformance ;;
    sqlock_redis_conformance_tests) prefix=redis/conformance ;;
    sqlock_conformance_local) prefix=local/conformance ;;
    *) echo "*"; return ;;
  esac
  read -r -a variants <<<"$(variants_of "$1")"
  for v in "${variants[@]}"; do
    if [ "$v" = "*" ]; then patterns+=("$prefix*"); else patterns+=("$prefix.*/$v"); fi
  done
  (IFS=:; echo "${patterns[*]}")
}
url_of() {
  case "$1" in
    sqlock_postgres_conformance_tests) echo "${SQLOCK_TEST_POSTGRES_URL:-}" ;;
    sqlock_redis_conformance_tests) echo "${SQLOCK_TEST_REDIS_URL:-}" ;;
    *) echo local ;;
  esac
}
unset_url() {
  echo "sanitize.sh: the server URL of $1 is unset" >&2
  if [ "${SQLOCK_TEST_REQUIRE_ALL:-0}" = 1 ]; then return 1; fi
  return 77
}
flags_of() {
  case "$1" in
    asan) echo "-fsanitize=address,undefined -fno-sanitize-recover=all" ;;
    tsan) echo "-fsanitize=thread" ;;
    *) echo "sanitize.sh: unknown profile '$1' (asan or tsan)" >&2; return 64 ;;
  esac
}

build() {
  local name=$1 root=$2 flags dir="$2/build-$1" t0 targets=() p
  flags=$(flags_of "$name")
  local backends=(-DSQLOCK_WITH_SQLITE=ON -DSQLOCK_WITH_MYSQL=OFF -DSQLOCK_WITH_SOCI=OFF
    -DSQLOCK_WITH_ZOOKEEPER=OFF -DSQLOCK_WITH_ETCD=OFF)
  [ -n "$(url_of sqlock_postgres_conformance_tests)" ] && pg=ON || pg=OFF
  [ -n "$(url_of sqlock_redis_conformance_tests)" ] && redis=ON || redis=OFF
  backends+=(-DSQLOCK_WITH_POSTGRES=$pg -DSQLOCK_WITH_REDIS=$redis)
  for p in "${programs[@]}"; do [ -n "$(url_of "$p")" ] && targets+=("$p"); done
  t0=$(date +%s)
  mkdir -p "$dir"
  cmake -S "$src" -B "$dir" "${launcher[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="$flags -fno-omit-frame-pointer" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DSQLOCK_WERROR=OFF -DSQLOCK_BUILD_CLI=OFF -DSQLOCK_BUILD_BENCHMARKS=OFF \
    -DCMAKE_UNITY_BUILD="${SQLOCK_SANITIZE_UNITY:-ON}" "${backends[@]}" >"$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log" >&2; return 1; }
  cmake --build "$dir" -j2 --target "${targets[@]}" >"$dir/build.log" 2>&1 ||
    { tail -40 "$dir/build.log" >&2; return 1; }
  echo "sanitize.sh: $name build took $(($(date +%s) - t0)) s" >&2
}

run() {
  local name=$1 root=$2 prog=$3 dir="$2/build-$1" filter exe t0 log
  flags_of "$name" >/dev/null
  [ -n "$(url_of "$prog")" ] || { unset_url "$prog"; return; }
  filter="$(filter_of "$prog")-$nofork:$timing_only"
  exe=$(find "$dir/tests" -type f -name "$prog" -perm -u+x | head -1)
  [ -n "$exe" ] || { echo "sanitize.sh: $prog is not built in $dir (run: sanitize.sh build $name $root)" >&2; return 1; }
  export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1
  export LSAN_OPTIONS=suppressions=$src/scripts/lsan.supp:print_suppressions=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  log="$dir/$prog.log"
  t0=$(date +%s)
  if ! "$exe" --gtest_filter="$filter" >"$log" 2>&1; then
    echo "sanitize.sh: $name: $prog failed (log: $log)" >&2
    grep -m5 -E "ERROR: (Address|Thread|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error|FAILED" \
      "$log" >&2 || true
    return 1
  fi
  echo "sanitize.sh: $name: $prog took $(($(date +%s) - t0)) s" >&2
}

all() {
  local name=$1 root=$2 p status=0 rc
  build "$name" "$root" || return 1
  for p in "${programs[@]}"; do
    rc=0
    run "$name" "$root" "$p" || rc=$?
    if [ "$rc" = 77 ]; then continue; fi
    [ "$rc" = 0 ] || status=1
  done
  return $status
}

case "${1:-all}" in
  build) [ $# = 3 ] || { echo "usage: sanitize.sh build PROFILE BUILD_ROOT" >&2; exit 64; }
    build "$2" "$3" ;;
  run) [ $# = 4 ] || { echo "usage: sanitize.sh run PROFILE BUILD_ROOT PROGRAM" >&2; exit 64; }
    run "$2" "$3" "$4" ;;
  asan | tsan) all "$1" "${2:-$src}" ;;
  all) status=0
    all asan "${2:-$src}" || status=1
    all tsan "${2:-$src}" || status=1
    exit $status ;;
  *) echo "usage: sanitize.sh [asan|tsan|all] [BUILD_ROOT] | build PROFILE ROOT | run PROFILE ROOT PROGRAM" >&2
    exit 64 ;;
esac
