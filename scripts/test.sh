#!/usr/bin/env bash
# The whole test run on a fresh Debian 12 machine: install dependencies and servers from
# Debian packages, start the servers on loopback, build with warnings as errors, run every test
# with SQLOCK_TEST_REQUIRE_ALL=1 (a missing server fails instead of skipping), stop the servers.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SQLOCK_BUILD_DIR:-build-ci}
if [ "${SQLOCK_SKIP_DEPS:-0}" != 1 ]; then scripts/install-deps.sh; fi
export SQLOCK_RUN_DIR=${SQLOCK_RUN_DIR:-/tmp/sqlock-servers}
trap 'scripts/servers.sh stop || true' EXIT
scripts/servers.sh start
# shellcheck source=/dev/null
source "$SQLOCK_RUN_DIR/env.sh"
export SQLOCK_TEST_REQUIRE_ALL=1
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSQLOCK_WERROR=ON
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure -j2 --timeout 600
