#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a consumer project against it
# twice: through find_package(sqlock) and through pkg-config.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)/consumer
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
out=$("$tmp/cmake-build/consumer" "$tmp/a.db")
[ "$out" = "fence 1" ] || { echo "FAIL: find_package consumer printed '$out'"; exit 1; }
echo "ok: find_package(sqlock) consumer"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig:$tmp/prefix/lib/x86_64-linux-gnu/pkgconfig"
# shellcheck disable=SC2046
g++ -std=c++20 -o "$tmp/pc-consumer" "$src/main.cpp" $(pkg-config --cflags --libs --static sqlock)
out=$("$tmp/pc-consumer" "$tmp/b.db")
[ "$out" = "fence 1" ] || { echo "FAIL: pkg-config consumer printed '$out'"; exit 1; }
echo "ok: pkg-config consumer"
