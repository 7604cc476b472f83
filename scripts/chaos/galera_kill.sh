#!/usr/bin/env bash
# The long Galera fault profile (not in CI): ROUNDS rounds (5 by default), each killing every
# node of the three-node cluster in turn (SIGKILL) under lock load on all three, with
# SECONDS_AFTER (30 by default) of load on the other two after each kill, then starting the
# node again and waiting for it to rejoin. Each run checks that no name was held twice and that
# the other nodes kept granting (tests/backends/mysql/galera_test.cpp, galera_kill) and prints
# its figures.
#   scripts/chaos/galera_kill.sh BUILD_DIR
# Needs the cluster of scripts/servers.d/22-galera.sh (source $SQLOCK_RUN_DIR/env.sh).
set -euo pipefail
build=${1:?usage: galera_kill.sh BUILD_DIR}
rounds=${ROUNDS:-5}
: "${SQLOCK_TEST_GALERA_URLS:?source the env.sh of scripts/servers.sh start galera}"
bin="$build/tests/backends/mysql/sqlock_mysql_galera_tests"
failed=0
for r in $(seq 1 "$rounds"); do
  for node in 1 2 3; do
    echo "galera_kill.sh: round $r, node $node" >&2
    SQLOCK_GALERA_KILL_NODE=$node SQLOCK_GALERA_KILL_SECONDS=${SECONDS_AFTER:-30} \
      "$bin" --gtest_filter='galera_kill.*' | grep -E 'galera kill|FAILED|OK \]' || failed=1
  done
done
exit $failed
