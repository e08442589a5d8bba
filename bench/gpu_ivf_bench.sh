#!/usr/bin/env bash
# GPU inverted-file benchmarks (BENCHMARKS.md protocol) on a machine with an NVIDIA GPU: builds
# bench/gpu/ivf_bench.cu against a CUDA build of quiver (libquiver.a), with the tool's synthetic data
# generator and IDX reader (tools/quiver), and runs it. Logs go to $OUT.
#
# usage: bench/gpu_ivf_bench.sh [--quick] [--runs N] [--fashion DIR] [--no-synthetic]
#   environment: QUIVER_BUILD_DIR (default build-gpu), OUT (default ./out), QUIVER_FASHION_MNIST_DIR,
#                CMAKE_CUDA_ARCHITECTURES (default 90), CXX
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${QUIVER_BUILD_DIR:-$root/build-gpu}"
OUT="${OUT:-$root/out}"
mkdir -p "$OUT"
arch="${CMAKE_CUDA_ARCHITECTURES:-90}"
arch="${arch%%;*}"
arch="${arch%%-*}"

if [[ ! -f "$build/libquiver.a" || ! -f "$build/quiver_link.txt" ]] || ! grep -q cudart "$build/quiver_link.txt"; then
  echo "gpu_ivf_bench.sh: no CUDA build of libquiver.a in $build (cmake -DQUIVER_CUDA=ON, target quiver_static)" >&2
  exit 1
fi

mkdir -p "$build/bench"
echo "==== building bench/gpu/ivf_bench.cu (sm_$arch)"
nvcc -std=c++17 -O3 -arch="sm_$arch" -I"$root" -I"$build/include" -c bench/gpu/ivf_bench.cu \
  -o "$build/bench/ivf_bench.o" || exit 1
tool_objects=()
for src in synth progress idx_io; do
  "${CXX:-c++}" -std=c++17 -O2 -I"$root" -c "tools/quiver/$src.cpp" -o "$build/bench/tool_$src.o" || exit 1
  tool_objects+=("$build/bench/tool_$src.o")
done
mapfile -t link_args < <(grep -v '^#' "$build/quiver_link.txt")
"${CXX:-c++}" "$build/bench/ivf_bench.o" "${tool_objects[@]}" "$build/libquiver.a" "${link_args[@]}" -lz -pthread \
  -o "$build/bench/ivf_bench" || exit 1

echo
echo "==== quiver: $build/bench/ivf_bench $*"
"$build/bench/ivf_bench" "$@" 2>&1 | tee "$OUT/ivf_bench.txt"
exit "${PIPESTATUS[0]}"
