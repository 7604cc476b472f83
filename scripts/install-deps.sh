#!/usr/bin/env bash
# Installs, from Debian packages, what the build and the tests need: the package lists in
# scripts/deps/*.txt (one per backend), or only the named ones (`install-deps.sh core`).
# Needs root (or sudo) and access to Debian's package archive.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lists=()
if [ $# -eq 0 ]; then lists=("$here"/deps/*.txt); else for n in "$@"; do lists+=("$here/deps/$n.txt"); done; fi
pkgs=$(cat "${lists[@]}" | sed 's/#.*//' | tr -s ' \n' '\n' | grep -v '^$' | sort -u)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# policy-rc.d keeps the packages' own service scripts from starting servers: tests start their
# own instances on loopback with private data directories.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $pkgs
