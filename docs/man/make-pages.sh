#!/usr/bin/env bash
# Writes the man pages of the sqlock command into OUTDIR: sqlock(1) and one page per
# subcommand, sqlock-run(1), sqlock-list(1), ... (git's layout). Each page is made by help2man
# from the program's own --help, so a page never disagrees with the program; the sections
# --help cannot carry (environment, exit status, examples, see also) come from sqlock.h2m.
# Usage: docs/man/make-pages.sh SQLOCK OUTDIR
set -euo pipefail
sqlock=$(realpath "$1")
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
version=$("$sqlock" --version | awk 'NR == 1 {print $2}')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The subcommands, as the program lists them.
subs=$("$sqlock" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}')

help2man --no-info --no-discard-stderr --version-string="$version" \
  --name="distributed locks whose home is the database" --include="$here/sqlock.h2m" \
  --output="$out/sqlock.1" "$sqlock"
for s in $subs; do
  # help2man runs a program: a two-line wrapper runs the subcommand.
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$sqlock" "$s" >"$tmp/sqlock-$s"
  chmod +x "$tmp/sqlock-$s"
  what=$("$sqlock" --help | awk -v s="$s" '$1 == s {sub(/^ *[a-z-]+ +/, ""); print; exit}')
  help2man --no-info --no-discard-stderr --version-string="$version" --name="$what" \
    --include="$here/sqlock.h2m" --output="$out/sqlock-$s.1" "$tmp/sqlock-$s"
  # The wrapper's path is not the command's name.
  sed -i "s|$tmp/sqlock-$s|sqlock $s|g; s|${sqlock//|/\\|}|sqlock|g" "$out/sqlock-$s.1"
done
sed -i "s|${sqlock//|/\\|}|sqlock|g" "$out/sqlock.1"
