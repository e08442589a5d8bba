#!/usr/bin/env bash
# For a machine with an NVIDIA GPU (Hopper, sm_90): builds with the CUDA backend required, runs the
# GPU suites, the rest of the suites (whose AUTO contexts run on the GPU there), compute-sanitizer
# memcheck over the GPU suite, and bench/gpu_bench.sh when it exists. Needs cmake, a CUDA toolkit,
# OpenBLAS and GoogleTest already installed (it installs nothing and needs no network).
# Every log goes to $OUT (default ./out).
#
# usage: scripts/gpu.sh
#   environment: OUT (log folder), QUIVER_JOBS (default 16), CMAKE_CUDA_ARCHITECTURES (default 90),
#                QUIVER_MEMCHECK_FILTER (a --gtest_filter for the memcheck run, default all),
#                QUIVER_MEMCHECK_ARGS (more compute-sanitizer options)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
OUT="${OUT:-$root/out}"
mkdir -p "$OUT"
jobs="${QUIVER_JOBS:-16}"
arch="${CMAKE_CUDA_ARCHITECTURES:-90}"
build=build-gpu
summary=()
failed=0

step() {
  local name="$1" log="$OUT/$1.log"
  shift
  local t0=$(date +%s)
  echo
  echo "==== $name: $*" | tee "$log"
  "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]} dt=$(($(date +%s) - t0))
  if [[ $rc -eq 0 ]]; then
    summary+=("$(printf '  PASS  %-16s %5ss  %s' "$name" "$dt" "$log")")
  else
    summary+=("$(printf '  FAIL  %-16s %5ss  %s (exit %s)' "$name" "$dt" "$log" "$rc")")
    failed=$((failed + 1))
  fi
  return $rc
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -a)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || echo "nvidia-smi: not available"
  nvcc --version 2>&1 | tail -2 || echo "nvcc: not found"
  cmake --version | head -1
  ${CXX:-c++} --version | head -1
} 2>&1 | tee "$OUT/machine.txt"

if step configure cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DQUIVER_CUDA=ON \
       -DCMAKE_CUDA_ARCHITECTURES="$arch" &&
   step build cmake --build "$build" -j "$jobs"; then
  step gpu-tests ctest --test-dir "$build" -L gpu --output-on-failure --timeout 1800 --no-tests=error
  step other-tests ctest --test-dir "$build" -LE gpu --output-on-failure --timeout 1800 -j 8

  gpu_test="$build/tests/quiver_gpu_test"
  if [[ -x "$gpu_test" ]]; then
    sanitizer="$(command -v compute-sanitizer || true)"
    [[ -z "$sanitizer" && -x /usr/local/cuda/bin/compute-sanitizer ]] && sanitizer=/usr/local/cuda/bin/compute-sanitizer
    if [[ -n "$sanitizer" ]]; then
      # API errors are not reported: the suite provokes some on purpose (out-of-memory tests), and the
      # library checks every CUDA call itself; memcheck is here for memory access errors and leaks.
      step memcheck "$sanitizer" --tool memcheck --error-exitcode 1 --leak-check full \
        --report-api-errors no ${QUIVER_MEMCHECK_ARGS:-} \
        "$gpu_test" --gtest_filter="${QUIVER_MEMCHECK_FILTER:-*}"
    else
      summary+=("  SKIP  memcheck         compute-sanitizer not found")
    fi
  else
    summary+=("  SKIP  memcheck         no GPU test binary ($gpu_test)")
  fi
  if [[ -f bench/gpu_bench.sh ]]; then
    step gpu-bench env QUIVER_BUILD_DIR="$root/$build" OUT="$OUT" bash bench/gpu_bench.sh
  fi
fi

echo
echo "==== summary" | tee "$OUT/summary.txt"
printf '%s\n' "${summary[@]}" | tee -a "$OUT/summary.txt"
if [[ $failed -eq 0 ]]; then
  echo "gpu.sh: OK" | tee -a "$OUT/summary.txt"
else
  echo "gpu.sh: FAILED ($failed step(s))" | tee -a "$OUT/summary.txt"
fi
[[ $failed -eq 0 ]]
