#!/usr/bin/env bash
# Metric-space range search benchmark (bench/metric/metric_bench.cpp): builds the driver against a
# build of quiver (CPU or CUDA), runs it on the word list and synthetic vectors, logs to $OUT.
#
# usage: bench/metric_bench.sh [metric_bench options]   (default: --devices cpu --vectors 100000)
#   environment: QUIVER_BUILD_DIR (default build), OUT (default ./out),
#                WORDS (default /usr/share/dict/spanish, from the wspanish package)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QUIVER_BUILD_DIR:-$root/build}"
OUT="${OUT:-$root/out}"
words="${WORDS:-/usr/share/dict/spanish}"
mkdir -p "$OUT"
source "$root/bench/driver.sh"
build_driver metric_bench "$root/bench/metric/metric_bench.cpp"
args=("$@")
[[ ${#args[@]} -eq 0 ]] && args=(--devices cpu --vectors 100000)
"$build/bench/metric_bench" --words "$words" --json "$OUT/metric_bench.json" "${args[@]}" 2>&1 | tee "$OUT/metric_bench.txt"
