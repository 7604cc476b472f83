#!/usr/bin/env bash
# Installs, from Debian packages, everything the build and the tests need: the package lists
# in scripts/deps/*.txt (one per backend). Needs root (or sudo) and network access to Debian.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pkgs=$(cat "$here"/deps/*.txt | sed 's/#.*//' | tr -s ' \n' '\n' | grep -v '^$' | sort -u)
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
