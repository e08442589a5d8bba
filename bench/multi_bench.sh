#!/usr/bin/env bash
# Multi-GPU benchmark (bench/multi/multi_bench.cpp): builds the driver against a CUDA build of quiver
# and runs it on every visible GPU (1, 2, 4 ... of them), logging to $OUT. NCCL's NVLink multicast
# stays off on the multi-GPU machines.
#
# usage: bench/multi_bench.sh [multi_bench options]   (default: 1M x 128, 10 000 queries)
#   environment: QUIVER_BUILD_DIR (default build), OUT (default ./out)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QUIVER_BUILD_DIR:-$root/build}"
OUT="${OUT:-$root/out}"
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
source "$root/bench/driver.sh"
build_driver multi_bench "$root/bench/multi/multi_bench.cpp"
nvidia-smi --query-gpu=index,name,memory.total --format=csv 2>&1 | tee "$OUT/multi_bench.txt"
"$build/bench/multi_bench" "$@" 2>&1 | tee -a "$OUT/multi_bench.txt"
