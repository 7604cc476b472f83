#!/usr/bin/env bash
# The whole test run on a fresh Debian 12 machine: install dependencies and servers from
# Debian packages, start the servers on loopback, build with warnings as errors, run every test
# with SQLOCK_TEST_REQUIRE_ALL=1 (a missing server fails instead of skipping), stop the servers.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SQLOCK_BUILD_DIR:-build-ci}
started=$(date +%s)
stage() { echo "test.sh: $1 done at $(($(date +%s) - started)) s"; }
if [ "${SQLOCK_SKIP_DEPS:-0}" != 1 ]; then scripts/install-deps.sh; fi
stage "installing dependencies"
export SQLOCK_RUN_DIR=${SQLOCK_RUN_DIR:-/tmp/sqlock-servers}
trap 'scripts/servers.sh stop || true' EXIT
# The servers start (clusters take a minute or two, mostly waiting) while the build runs.
servers_log=$(mktemp)
scripts/servers.sh start >"$servers_log" 2>&1 &
servers=$!
# RelWithDebInfo at -g1: the optimised code users build, with the line tables a backtrace needs
# but not the full debug information, which would cost about a third more compile time. A unity
# build (CMake's batches of 8 sources per compiler run, as the sanitizer and fuzzing builds):
# the headers (gtest, libpqxx, the standard library) are parsed once per batch instead of once
# per source, which is most of a fresh build's time; a developer's build may leave it off.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DSQLOCK_WERROR=ON -DCMAKE_UNITY_BUILD=ON
cmake --build "$build" -j2
stage "building"
if ! wait "$servers"; then
  cat "$servers_log"
  echo "test.sh: the servers did not start" >&2
  exit 1
fi
cat "$servers_log"
stage "starting the servers (beside the build)"
# shellcheck source=/dev/null
source "$SQLOCK_RUN_DIR/env.sh"
export SQLOCK_TEST_REQUIRE_ALL=1
# The side builds (sanitizers, clang fuzzing, shared libraries: the CTest tests labelled
# side_build_setup) start in the background at idle CPU priority, so that they take the CPU the
# tests leave idle without holding one of CTest's two slots; meanwhile CTest runs every other
# test, two at a time on two cores (three or four at a time made the tests with short deadlines
# fail now and then: full runs of 2026-11-27 at four saved 2-3 minutes and each failed PostgreSQL
# or pgbouncer cases whose statements outlived their attempts). Then the side_build tests: the builds again (up to date by then, or waited for) and
# the sanitized programs and fuzz targets they built.
jobs=-j"${SQLOCK_TEST_JOBS:-2}"
ctest --test-dir "$build" -L side_build_setup --show-only=json-v1 >"$build/side-builds.json"
python3 scripts/side-builds.py "$build/side-builds.json" "$build/side-builds.log" &
side=$!
status=0
ctest --test-dir "$build" --output-on-failure "$jobs" --timeout 600 -LE side_build || status=1
stage "testing (all but the side builds)"
# A side build still going on in the background holds its lock file: CTest's run of it waits
# for it (then finds it up to date), and the programs of the builds done so far run meanwhile.
ctest --test-dir "$build" --output-on-failure "$jobs" --timeout 600 -L side_build || status=1
stage "testing (the side builds and their programs)"
wait "$side" || echo "test.sh: a side build failed in the background (its test above says why; log: $build/side-builds.log)"
exit $status
