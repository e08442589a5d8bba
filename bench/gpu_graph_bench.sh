#!/usr/bin/env bash
# GPU graph search benchmark (bench/gpu/graph_bench.cpp) on synth-1m-128 made by `quiver gen` (and on
# any other .fvecs pair given): builds the driver against a CUDA build of quiver, runs it, logs to $OUT.
#
# usage: bench/gpu_graph_bench.sh [graph_bench options]
#   environment: QUIVER_BUILD_DIR (default build-gpu), OUT (default ./out), DATA (default /tmp/quiver-data),
#                DATASET (default synth-1m-128)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QUIVER_BUILD_DIR:-$root/build-gpu}"
OUT="${OUT:-$root/out}"
data="${DATA:-/tmp/quiver-data}"
dataset="${DATASET:-synth-1m-128}"
mkdir -p "$OUT" "$data" "$build/bench"
if [[ ! -f "$data/$dataset/base.fvecs" ]]; then
  "$build/bin/quiver" gen --dataset "$dataset" --out "$data/$dataset" || exit 1
fi
cuda_include="$(dirname "$(command -v nvcc)")/../include"
"${CXX:-c++}" -std=c++17 -O3 -I"$root" -I"$build/include" -I"$cuda_include" -c "$root/bench/gpu/graph_bench.cpp" \
  -o "$build/bench/graph_bench.o" || exit 1
mapfile -t link_args < <(grep -v '^#' "$build/quiver_link.txt")
"${CXX:-c++}" "$build/bench/graph_bench.o" "$build/libquiver.a" "${link_args[@]}" -o "$build/bench/graph_bench" || exit 1
"$build/bench/graph_bench" --base "$data/$dataset/base.fvecs" --query "$data/$dataset/query.fvecs" \
  --json "$OUT/graph_bench.json" "$@" 2>&1 | tee "$OUT/graph_bench.txt"
