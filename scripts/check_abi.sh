#!/usr/bin/env bash
# Checks the ABI of libquiver.so (the types and signatures of the exported qv_ functions, as the
# library's DWARF describes them) against the committed baseline abi/libquiver.abi, with libabigail:
#   - new functions pass (additive);
#   - any change to an existing function or a type it reaches fails, and says whether libabigail
#     thinks it incompatible: an incompatible change needs a QV_ABI_VERSION bump; a deliberate
#     compatible one (a field appended to a struct_size-versioned struct) is accepted by refreshing
#     the baseline in the same change (--update), so every ABI change is a reviewed one.
# The library must carry debug information (CI checks build-asan's, built with -g).
#
# usage: scripts/check_abi.sh [LIBRARY]            LIBRARY defaults to build-asan/libquiver.so
#        scripts/check_abi.sh --update [LIBRARY]   rewrites abi/libquiver.abi from LIBRARY
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
baseline="$root/abi/libquiver.abi"
update=0
if [[ "${1:-}" == "--update" ]]; then
  update=1
  shift
fi
lib="${1:-$root/build-asan/libquiver.so}"
if ! command -v abidw >/dev/null || ! command -v abidiff >/dev/null; then
  echo "check_abi: FAILED: abidw / abidiff not found (apt-get install abigail-tools)" >&2
  exit 1
fi
if [[ ! -f "$lib" ]]; then
  echo "check_abi: FAILED: $lib not found (build first)" >&2
  exit 1
fi

# Only what the public header declares: the exported functions and the types they reach.
dump() {
  abidw --exported-interfaces-only --headers-dir "$root/include/quiver" --drop-private-types \
    --no-corpus-path --no-comp-dir-path --no-show-locs "$1" | sed "s|$root/||g"
}

if [[ $update -eq 1 ]]; then
  dump "$lib" >"$baseline"
  echo "check_abi: wrote abi/libquiver.abi from $lib"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
dump "$lib" >"$tmp/current.abi"
set +e
abidiff --no-added-syms --harmless "$baseline" "$tmp/current.abi" >"$tmp/report.txt" 2>&1
status=$?
set -e
# abidiff's exit status is a bit field: 1 error, 2 usage error, 4 ABI change, 8 incompatible change.
if (( status & 3 )); then
  cat "$tmp/report.txt" >&2
  echo "check_abi: FAILED: abidiff could not compare (status $status)" >&2
  exit 1
fi
if (( status & 8 )); then
  cat "$tmp/report.txt" >&2
  echo "check_abi: FAILED: an incompatible ABI change against abi/libquiver.abi (bump QV_ABI_VERSION" \
       "and refresh the baseline with --update, or keep the change additive)" >&2
  exit 1
fi
if (( status & 4 )); then
  cat "$tmp/report.txt" >&2
  echo "check_abi: FAILED: the existing interface changed compatibly against abi/libquiver.abi; if" \
       "that is intended, refresh the baseline in the same change (scripts/check_abi.sh --update)" >&2
  exit 1
fi
echo "check_abi: OK, the ABI matches abi/libquiver.abi"
