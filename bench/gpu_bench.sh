#!/usr/bin/env bash
# GPU benchmarks (BENCHMARKS.md protocol) on a machine with an NVIDIA GPU: builds bench/gpu/gpu_bench.cu
# against a CUDA build of quiver (libquiver.a), runs it, then PyTorch's matmul + topk on the same
# shapes when `import torch` works there. Prints the machine, the commands and a table; logs and JSON
# lines go to $OUT.
#
# usage: bench/gpu_bench.sh [--quick] [--runs N] [--only SECTION]
#   --only range: exact range search beside k=10 k-NN, then faiss-cpu's range_search on the same data
#   (bench/range/faiss_range.py, 2 threads) when `import faiss` works there (pip install faiss-cpu).
#   environment: QUIVER_BUILD_DIR (default build-gpu, as scripts/gpu.sh makes it), OUT (default ./out),
#                CMAKE_CUDA_ARCHITECTURES (default 90), CXX, QUIVER_BENCH_PREBUILT=1 (run the
#                $QUIVER_BUILD_DIR/bench/gpu_bench already built, e.g. carried from another machine)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${QUIVER_BUILD_DIR:-$root/build-gpu}"
OUT="${OUT:-$root/out}"
mkdir -p "$OUT"
arch="${CMAKE_CUDA_ARCHITECTURES:-90}"
arch="${arch%%;*}"
arch="${arch%%-*}"

if [[ ! -f "$build/libquiver.a" || ! -f "$build/quiver_link.txt" ]]; then
  echo "gpu_bench.sh: no CUDA build in $build (run scripts/gpu.sh, or cmake -DQUIVER_CUDA=ON first)" >&2
  exit 1
fi
if ! grep -q cudart "$build/quiver_link.txt"; then
  echo "gpu_bench.sh: $build was configured without the CUDA backend" >&2
  exit 1
fi

mkdir -p "$build/bench"
if [[ "${QUIVER_BENCH_PREBUILT:-0}" == 1 && -x "$build/bench/gpu_bench" ]]; then
  echo "==== using the prebuilt $build/bench/gpu_bench (QUIVER_BENCH_PREBUILT=1)"
else
  echo "==== building bench/gpu/gpu_bench.cu (sm_$arch)"
  nvcc -std=c++17 -O3 -arch="sm_$arch" -I"$root" -I"$build/include" -c bench/gpu/gpu_bench.cu \
    -o "$build/bench/gpu_bench.o" || exit 1
  mapfile -t link_args < <(grep -v '^#' "$build/quiver_link.txt")
  "${CXX:-c++}" "$build/bench/gpu_bench.o" "$build/libquiver.a" "${link_args[@]}" -o "$build/bench/gpu_bench" || exit 1
fi

echo
echo "==== quiver: $build/bench/gpu_bench --json $OUT/gpu_bench.json $*"
"$build/bench/gpu_bench" --json "$OUT/gpu_bench.json" "$@" 2>&1 | tee "$OUT/gpu_bench.txt"
rc=${PIPESTATUS[0]}

echo
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "==== baseline: python3 bench/gpu/torch_bench.py --json $OUT/torch_bench.json $*"
  PYTHONUNBUFFERED=1 python3 bench/gpu/torch_bench.py --json "$OUT/torch_bench.json" "$@" 2>&1 | tee "$OUT/torch_bench.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1
else
  echo "==== baseline: PyTorch with CUDA is not available here; skipped"
fi

# The range section's CPU baseline: faiss-cpu on the same synthetic data and radii.
only="" quick=()
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  case "${args[i]}" in
    --only) only="${args[i + 1]:-}" ;;
    --quick) quick=(--quick) ;;
  esac
done
if [[ "$only" == range ]]; then
  echo
  if python3 -c 'import faiss, numpy' 2>/dev/null; then
    echo "==== baseline: python3 bench/range/faiss_range.py --json $OUT/faiss_range.json ${quick[*]}"
    PYTHONUNBUFFERED=1 python3 bench/range/faiss_range.py --json "$OUT/faiss_range.json" "${quick[@]}" 2>&1 |
      tee "$OUT/faiss_range.txt"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1
  else
    echo "==== baseline: faiss-cpu is not installed here (pip install faiss-cpu); skipped"
  fi
fi
exit $rc
