#!/usr/bin/env bash
# Billion-scale IVF-PQ over every visible GPU (bench/multi/billion_bench.cpp): builds the driver
# against a CUDA build of quiver and runs it, logging to $OUT. NCCL's NVLink multicast stays off.
#
# usage: bench/billion_bench.sh [billion_bench options]   (default: 1B x 96, Sharded,IVF262144,PQ32)
#   environment: QUIVER_BUILD_DIR (default build), OUT (default ./out)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QUIVER_BUILD_DIR:-$root/build}"
OUT="${OUT:-$root/out}"
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
source "$root/bench/driver.sh"
build_driver billion_bench "$root/bench/multi/billion_bench.cpp"
nvidia-smi --query-gpu=index,name,memory.total --format=csv 2>&1 | tee "$OUT/billion_bench.txt"
"$build/bench/billion_bench" "$@" 2>&1 | tee -a "$OUT/billion_bench.txt"
