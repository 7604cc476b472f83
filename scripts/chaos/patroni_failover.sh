#!/usr/bin/env bash
# The long Patroni fault profile (not in CI): ROUNDS runs (10 by default) of the failover test
# (tests/backends/postgres/patroni_test.cpp): each stops the leader's Patroni under lock load,
# checks that no name was held twice, that row-mode fences kept rising and that the advisory
# hold was reported lost, prints the takeover time, and starts the old leader again.
#   scripts/chaos/patroni_failover.sh BUILD_DIR
# Needs the cluster of scripts/servers.d/14-patroni.sh (source $SQLOCK_RUN_DIR/env.sh).
set -euo pipefail
build=${1:?usage: patroni_failover.sh BUILD_DIR}
rounds=${ROUNDS:-10}
: "${SQLOCK_TEST_PATRONI_URL:?source the env.sh of scripts/servers.sh start patroni}"
bin="$build/tests/backends/postgres/sqlock_postgres_patroni_tests"
failed=0
for r in $(seq 1 "$rounds"); do
  echo "patroni_failover.sh: round $r" >&2
  "$bin" | grep -E 'patroni:|FAILED|OK \]' || failed=1
done
exit $failed
