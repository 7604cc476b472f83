# Sourced by the CLI test scripts: $sqlock from $1, a temporary SQLite store in $dir (removed,
# with background jobs stopped, on exit), check() and finish().
set -uo pipefail
sqlock=$1
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
export SQLOCK_URL="sqlite:$dir/locks.db"
fails=0
check() {  # check DESCRIPTION EXPECTED ACTUAL
  if [ "$2" == "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}
finish() {  # finish WHAT: the verdict and exit status
  [ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
  echo "all $1 checks passed"
}
