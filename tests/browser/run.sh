#!/usr/bin/env bash
# The browser suite: installs playwright-core (npm ci, from the committed lock file) into the
# build directory and runs admin_page.test.mjs with Debian's chromium. Screenshots land in
# BUILD_DIR/browser-artifacts.
# Usage: run.sh SQLOCK_BINARY BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sqlock=$(realpath "$1")
work=$2/browser-test
[ -x /usr/bin/chromium ] || { echo "chromium is not installed (scripts/deps/browser.txt)"; exit 1; }
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here/admin_page.test.mjs" "$work/"
(cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
cd "$work"
exec node --test-reporter=spec admin_page.test.mjs "$sqlock" "$2/browser-artifacts"
