#!/usr/bin/env bash
# Installs a build into a temporary prefix and builds a consumer (tests/install) against it four ways:
# find_package with quiver::quiver and quiver::quiver_static, pkg-config for the shared library, and
# pkg-config --static for the archive; runs each.
#
# usage: scripts/check_install.sh [BUILD_DIR]    BUILD_DIR defaults to build
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"
for f in include/quiver/quiver.h include/quiver/version.h include/quiver/export.h lib/libquiver.a \
         lib/cmake/quiver/quiverConfig.cmake lib/pkgconfig/quiver.pc; do
  [[ -f "$prefix/$f" ]] || { echo "check_install: FAILED: $f not installed" >&2; exit 1; }
done
so="$(ls "$prefix"/lib/libquiver.so.* 2>/dev/null | head -1)"
[[ -n "$so" ]] || { echo "check_install: FAILED: libquiver.so not installed" >&2; exit 1; }

echo "-- find_package(quiver)"
cmake -S "$root/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$tmp/consumer.log" || { cat "$tmp/consumer.log"; exit 1; }
cmake --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; exit 1; }
"$tmp/consumer/consumer_shared"
"$tmp/consumer/consumer_static"

echo "-- pkg-config"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cc=${CC:-cc}
$cc -std=c99 "$root/tests/install/consumer.c" -o "$tmp/pc_shared" \
  $(pkg-config --cflags quiver) $(pkg-config --libs quiver)
LD_LIBRARY_PATH="$prefix/lib" "$tmp/pc_shared"
# The archive alone: -lquiver would pick libquiver.so beside it.
mkdir -p "$tmp/static-only"
cp -r "$prefix/include" "$prefix/lib" "$tmp/static-only/"
rm -f "$tmp/static-only/lib/"libquiver.so*
PKG_CONFIG_PATH="$tmp/static-only/lib/pkgconfig" \
  $cc -std=c99 "$root/tests/install/consumer.c" -o "$tmp/pc_static" \
  $(PKG_CONFIG_PATH="$tmp/static-only/lib/pkgconfig" pkg-config --cflags --static --libs quiver)
"$tmp/pc_static"
if readelf -d "$tmp/pc_static" | grep -q 'libquiver\.so'; then
  echo "check_install: FAILED: pkg-config --static linked libquiver.so" >&2
  exit 1
fi
echo "check_install: OK (find_package shared + static, pkg-config shared + --static)"
