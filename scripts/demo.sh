#!/usr/bin/env bash
# The demo on the embedded SQLite default: installs the build dependencies (Debian packages),
# builds the sqlock command, then starts four worker processes that each run a "job" three times
# under the same lock. The log shows one holder at a time and fencing tokens that only rise.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${SQLOCK_SKIP_DEPS:-0}" != 1 ]; then scripts/install-deps.sh core; fi
build=${SQLOCK_BUILD_DIR:-build-demo}
off=""
for b in postgres mysql soci redis zookeeper etcd; do off="$off -DSQLOCK_WITH_${b^^}=OFF"; done
# shellcheck disable=SC2086
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSQLOCK_BUILD_TESTS=OFF \
  -DSQLOCK_BUILD_BENCHMARKS=OFF $off >/dev/null
cmake --build "$build" -j2 --target sqlock_cli >/dev/null
sqlock=$build/bin/sqlock

demo=$(mktemp -d)
trap 'rm -rf "$demo"' EXIT
export SQLOCK_URL="sqlite:$demo/locks.db"
echo "== 4 worker processes, 3 jobs each, one lock 'nightly-report' in $demo/locks.db"
for w in 1 2 3 4; do
  (
    for j in 1 2 3; do
      "$sqlock" run --lease 5s nightly-report -- sh -c '
        printf "%s  worker %s job %s  holds %s  fence %s\n" "$(date +%T.%3N)" '"$w"' '"$j"' "$SQLOCK_NAME" "$SQLOCK_FENCE"
        echo "start $SQLOCK_FENCE" >>'"$demo"'/log; sleep 0.2; echo "end $SQLOCK_FENCE" >>'"$demo"'/log'
    done
  ) &
done
sleep 0.5
echo "== sqlock list (while the workers run)"
"$sqlock" list
wait
echo "== check"
if awk 'NR%2==1 && $1!="start"{exit 1} NR%2==0 && $1!="end"{exit 1} NR%2==1{if($2<=last)exit 1; last=$2}' "$demo/log"; then
  echo "12 jobs ran one at a time; fencing tokens rose: $(awk '$1=="start"{printf "%s ", $2}' "$demo/log")"
else
  echo "overlap detected!" >&2
  exit 1
fi
