#!/usr/bin/env bash
# Issue 5's GPU measurements through the public C API (the `quiver` tool, host to host): recall@10 vs
# QPS sweeps of IVF-Flat and IVF-PQ on Fashion-MNIST and the synthetic 1M x 128 recipe, latency at
# batch 1 and 100, and the train + add time of IVF4096,PQ32. JSON lines go to $OUT; plot them here
# with `python3 bench/plot_curves.py $OUT/*.json`.
#
# usage: bench/gpu_ivf_sweep.sh
#   environment: QUIVER_BUILD_DIR (default build-gpu, with the tool built: target quiver_cli), OUT
#                (default ./out), QUIVER_FASHION_MNIST_DIR (Fashion-MNIST's IDX files; skipped if unset)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${QUIVER_BUILD_DIR:-$root/build-gpu}"
OUT="${OUT:-$root/out}"
mkdir -p "$OUT"
tool="$build/bin/quiver"
[[ -x "$tool" ]] || { echo "gpu_ivf_sweep.sh: no $tool (build target quiver_cli)" >&2; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$OUT/ivf_sweep_machine.txt"
failed=0
run() {
  echo "==== $*"
  "$@" || failed=$((failed + 1))
}

if [[ -n "${QUIVER_FASHION_MNIST_DIR:-}" ]]; then
  run "$tool" bench --dataset fashion-mnist --index IVF256,Flat --device cuda --nprobe 1,2,4,8,16,32,64,256 \
    --latency --json "$OUT/gpu-fashion-mnist.json"
  for mode in fp32 fp16; do
    run "$tool" bench --dataset fashion-mnist --index IVF256,PQ56 --device cuda --mode "$mode" \
      --nprobe 1,4,16,64,256 --json "$OUT/gpu-fashion-mnist.json"
  done
fi

synth="$build/data/synth-1m-128"
[[ -f "$synth/gt.ivecs" ]] || run "$tool" gen --dataset synth-1m-128 --out "$synth" --device cuda
run "$tool" bench --dataset "$synth" --index IVF1024,Flat --device cuda --nprobe 1,2,4,8,16,32 \
  --json "$OUT/gpu-synth-1m-128.json"
for mode in fp32 fp16; do
  run "$tool" bench --dataset "$synth" --index IVF1024,PQ64 --device cuda --mode "$mode" --nprobe 2,4,6,8,16,64 \
    --json "$OUT/gpu-synth-1m-128.json"
done
run "$tool" bench --dataset "$synth" --index IVF1024,PQ32,Refine --device cuda --refine 4,16 --nprobe 2,4,8,16 \
  --json "$OUT/gpu-synth-1m-128.json"
run "$tool" bench --dataset "$synth" --index IVF4096,PQ32 --device cuda --nprobe 16 --repeats 1 \
  --json "$OUT/gpu-synth-1m-128.json"
echo "gpu_ivf_sweep.sh: $failed failed step(s)"
[[ $failed -eq 0 ]]
