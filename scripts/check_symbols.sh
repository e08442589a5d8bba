#!/usr/bin/env bash
# Checks the symbols that libquiver.so exports against the committed baseline abi/symbols.txt, which
# is derived from the QV_API declarations of include/quiver/quiver.h (never from a built library):
#   - an exported symbol not in the baseline (an accidental export) fails;
#   - a baseline symbol the library lacks (a declared function with no definition) fails;
#   - a header whose QV_API functions differ from the baseline fails: a new public function must be
#     added to abi/symbols.txt in the same change (run this script with --update), and removing one
#     is an ABI break (bump QV_ABI_VERSION).
#
# usage: scripts/check_symbols.sh [LIBRARY]     LIBRARY defaults to build/libquiver.so
#        scripts/check_symbols.sh --update      rewrites abi/symbols.txt from the header
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
header="$root/include/quiver/quiver.h"
baseline="$root/abi/symbols.txt"
export LC_ALL=C

header_symbols() {
  # Every `QV_API <return type> qv_name(` declaration in the public header.
  sed -nE 's/^QV_API[^(]*[^A-Za-z0-9_](qv_[A-Za-z0-9_]+)[[:space:]]*\(.*/\1/p' "$header" | sort -u
}

if [[ "${1:-}" == "--update" ]]; then
  header_symbols >"$baseline"
  echo "check_symbols: wrote $(wc -l <"$baseline") symbols to abi/symbols.txt"
  exit 0
fi

lib="${1:-$root/build/libquiver.so}"
if [[ ! -f "$lib" ]]; then
  echo "check_symbols: FAILED: $lib not found (build first)" >&2
  exit 1
fi
if [[ ! -f "$baseline" ]]; then
  echo "check_symbols: FAILED: $baseline missing (scripts/check_symbols.sh --update)" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Defined dynamic symbols: text, data, bss, read-only data; also weak and unique globals, which would
# be an export just the same.
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRWVui]$/ { sub(/@.*/, "", $3); print $3 }' | sort -u \
  >"$tmp/exported"
header_symbols >"$tmp/declared"

status=0
if ! diff -u --label "abi/symbols.txt" --label "exported by $(basename "$lib")" \
    "$baseline" "$tmp/exported" >"$tmp/lib.diff"; then
  echo "check_symbols: FAILED: $lib exports a different symbol set than abi/symbols.txt" >&2
  echo "  (+ exported but not in the baseline: an accidental export; - declared but not defined)" >&2
  cat "$tmp/lib.diff" >&2
  status=1
fi
if ! diff -u --label "abi/symbols.txt" --label "QV_API in include/quiver/quiver.h" \
    "$baseline" "$tmp/declared" >"$tmp/header.diff"; then
  echo "check_symbols: FAILED: quiver.h declares a different QV_API set than abi/symbols.txt" >&2
  echo "  (a new function: scripts/check_symbols.sh --update; a removed one breaks the ABI)" >&2
  cat "$tmp/header.diff" >&2
  status=1
fi
if [[ $status -eq 0 ]]; then
  echo "check_symbols: OK, $(wc -l <"$baseline") exported symbols match abi/symbols.txt"
fi
exit $status
