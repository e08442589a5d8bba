#!/usr/bin/env bash
# For a machine with an NVIDIA GPU (Hopper, sm_90): builds with the CUDA backend required, runs the
# GPU suites, the rest of the suites (whose AUTO contexts run on the GPU there), compute-sanitizer
# memcheck over the GPU suite, and bench/gpu_bench.sh when it exists. Needs cmake, a CUDA toolkit,
# OpenBLAS and GoogleTest already installed (it installs nothing and needs no network).
# Every log goes to $OUT (default ./out).
#
# usage: scripts/gpu.sh                      everything above
#        scripts/gpu.sh --sanitize TOOLS     only the GPU suite under compute-sanitizer, for each of TOOLS
#                                            (racecheck, memcheck, synccheck, initcheck; comma-separated,
#                                            run at once), built alone, with the suites' smaller problems
#                                            (QUIVER_SANITIZER_SIZES=small) and split into shards run side
#                                            by side (spread over the GPUs where there are several).
#                                            On one H100, memcheck,synccheck,initcheck take one 10-minute
#                                            call (about 8 minutes); racecheck takes about five (split
#                                            it with QUIVER_SANITIZER_FILTER), or one on four H200s
#                                            with QUIVER_SANITIZER_SHARDS=40 (546 s, 2026-11-27).
#                                            Prints the hazards / errors found.
#   environment: OUT (log folder), QUIVER_JOBS (default 16), CMAKE_CUDA_ARCHITECTURES (default 90),
#                QUIVER_MEMCHECK_FILTER (a --gtest_filter for the memcheck run, default all),
#                QUIVER_MEMCHECK_ARGS (more compute-sanitizer options),
#                QUIVER_SANITIZER_SHARDS (--sanitize: processes side by side per tool, default 8),
#                QUIVER_SANITIZER_FILTER (--sanitize: a --gtest_filter, default all),
#                QUIVER_SANITIZER_SECONDS (--sanitize: a shard's time limit, default 540),
#                QUIVER_SANITIZER_ALONE (--sanitize: tests run one a process beside the shards; default,
#                without a filter, the slowest under racecheck: 2-7 minutes each on an H100)
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
sanitize=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sanitize)
      sanitize="${2:-}"
      shift 2 || { echo "gpu.sh: --sanitize needs a tool" >&2; exit 2; }
      ;;
    *) echo "gpu.sh: unknown argument $1 (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done
for tool in ${sanitize//,/ }; do
  case "$tool" in
    racecheck | memcheck | synccheck | initcheck) ;;
    *) echo "gpu.sh: --sanitize takes racecheck, memcheck, synccheck or initcheck, not $tool" >&2; exit 2 ;;
  esac
done

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

find_sanitizer() {
  local found
  found="$(command -v compute-sanitizer || true)"
  [[ -z "$found" && -x /usr/local/cuda/bin/compute-sanitizer ]] && found=/usr/local/cuda/bin/compute-sanitizer
  echo "$found"
}

# One shard of the GPU suite under the sanitizer (gtest's own sharding: test i goes to shard i mod N),
# its test contexts on GPU `device` (every GPU stays visible, so the multi-device tests still run),
# within a time limit (a shard stopped by it counts as failed).
sanitize_shard() {
  local sanitizer="$1" tool="$2" shards="$3" index="$4" device="$5" filter="$6"
  local options=(--tool "$tool" --error-exitcode 1)
  # API errors are not reported: the suite provokes some on purpose (out-of-memory tests).
  [[ "$tool" == memcheck ]] && options+=(--leak-check full --report-api-errors no)
  [[ "$tool" == racecheck ]] && options+=(--racecheck-report hazard)
  GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$index" QUIVER_SANITIZER_SIZES=small \
    QUIVER_TEST_DEVICE="$device" \
    timeout --signal=INT --kill-after=20 "${QUIVER_SANITIZER_SECONDS:-540}" \
    "$sanitizer" "${options[@]}" ${QUIVER_MEMCHECK_ARGS:-} "$build/tests/quiver_gpu_test" \
    --gtest_filter="$filter"
}

# The slowest tests under racecheck: alone, each finishes within a shard's limit; in a shard, after
# others, they did not.
default_alone="GpuFaultInjection.EveryKindSurvivesEveryFailedDeviceAllocation
GpuFlatRange.SmallTilesAndBuffersInParts GpuGraphSearch.WideQueueIsExactOnConnectedGraphs
GpuIvfRange.SmallTilesAndBlocks GpuMetricSearch.IntegerVectorsWithTiesAreExact
GpuMetricSearch.VectorsEveryMethodEqualsBruteForce GpuMetricSearch.LongStringsAreExact
GpuMetricSearch.SmallTileBudgetGivesTheSameResults GpuMetricIndex.VectorIndexesEqualTheReference
GpuMultiDevice.AddsSurviveEveryFailedDeviceAllocation GpuKnnStream.IdenticalToUnstreamedForEveryK
EveryKind/GpuMultiDevice.TwoDevicesFromTwoThreadsMatchOneDevice/OPQ16_IVF64_PQ16"

# --sanitize TOOLS: every tool's shards and lone tests side by side (the sanitizer's host side is the
# bottleneck; the GPUs serve them all, process i on GPU i mod GPUs), then, per tool, the tests passed
# and the hazards or errors reported.
sanitize_suite() {
  local tools="$1" shards="${QUIVER_SANITIZER_SHARDS:-8}" sanitizer pids=() names=() rc=0 i tool gpus
  sanitizer="$(find_sanitizer)"
  if [[ -z "$sanitizer" ]]; then
    echo "compute-sanitizer not found"
    return 1
  fi
  gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
  [[ "$gpus" -gt 0 ]] || gpus=1
  # The lone tests by default only over the whole suite; a filter names its own tests.
  local filter="${QUIVER_SANITIZER_FILTER:-*}" alone lone_default="$default_alone"
  [[ -n "${QUIVER_SANITIZER_FILTER:-}" ]] && lone_default=""
  read -r -a alone <<<"$(echo ${QUIVER_SANITIZER_ALONE-$lone_default})"
  if [[ ${#alone[@]} -gt 0 ]]; then
    local excluded
    excluded="$(IFS=:; echo "${alone[*]}")"
    [[ "$filter" == *-* ]] && filter="$filter:$excluded" || filter="$filter-$excluded"
  fi
  for tool in ${tools//,/ }; do
    for ((i = 0; i < shards; ++i)); do
      sanitize_shard "$sanitizer" "$tool" "$shards" "$i" $((i % gpus)) "$filter" >"$OUT/$tool-shard$i.log" 2>&1 &
      pids+=($!)
      names+=("$tool shard $i")
    done
    for ((i = 0; i < ${#alone[@]}; ++i)); do  # a lone test: shard 0 of 1
      sanitize_shard "$sanitizer" "$tool" 1 0 $(((shards + i) % gpus)) "${alone[$i]}" \
        >"$OUT/$tool-shard$((shards + i)).log" 2>&1 &
      pids+=($!)
      names+=("$tool shard $((shards + i))")
    done
  done
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
      read -r tool index <<<"${names[$i]/ shard / }"
      echo "${names[$i]} failed (exit code; 124: its time limit), last test started:" \
        "$(grep -E '^\[ RUN' "$OUT/$tool-shard$index.log" | tail -1)"
      rc=1
    fi
  done
  local tests findings
  for tool in ${tools//,/ }; do
    tests=$(cat "$OUT/$tool"-shard*.log | grep -c '^\[       OK \]')
    # "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)", "ERROR SUMMARY: N errors".
    findings=$(cat "$OUT/$tool"-shard*.log | grep -oE '(RACECHECK SUMMARY: [0-9]+ hazard|ERROR SUMMARY: [0-9]+ error)' |
      grep -oE '[0-9]+' | awk '{s += $1} END {print s + 0}')
    cat "$OUT/$tool"-shard*.log | grep -E '^\[  FAILED  \]|SUMMARY' | sort | uniq -c
    # Where the findings are (kernel and source line), and the tests they came from, most frequent
    # first: enough to start on without the logs.
    cat "$OUT/$tool"-shard*.log | grep -oE '^========= .* at .* in [^ ]+:[0-9]+' |
      sed -E 's/^========= +//; s/\+0x[0-9a-f]+//' | sort | uniq -c | sort -rn | head -6
    cat "$OUT/$tool"-shard*.log | grep -oE 'Host Frame: .*_Test::TestBody' | sort | uniq -c | sort -rn | head -6
    echo "$tool: $tests tests passed in $shards shards and ${#alone[@]} lone tests, $findings hazards / errors reported"
    [[ "$findings" -eq 0 ]] || rc=1
  done
  return $rc
}

# The metric-space benchmark on the word list (wspanish's, or a copy carried in .data/spanish) and
# synthetic vectors, the CPU (2 threads) and the GPU side by side.
metric_bench() {
  local words="${WORDS:-/usr/share/dict/spanish}"
  [[ -f "$words" ]] || words="$root/.data/spanish"
  if [[ -f "$words" ]]; then
    step metric-bench env QUIVER_BUILD_DIR="$root/$build" OUT="$OUT" WORDS="$words" \
      bash bench/metric_bench.sh --devices cpu,cuda --threads 2 --vectors 100000
  else
    summary+=("  SKIP  metric-bench      no word list (apt-get install wspanish, or .data/spanish)")
  fi
}

if [[ -n "$sanitize" ]]; then
  if step configure cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DQUIVER_CUDA=ON \
         -DCMAKE_CUDA_ARCHITECTURES="$arch" &&
     step build cmake --build "$build" -j "$jobs" --target quiver_gpu_test; then
    step "sanitize-${sanitize//,/-}" sanitize_suite "$sanitize"
  fi
elif step configure cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DQUIVER_CUDA=ON \
       -DCMAKE_CUDA_ARCHITECTURES="$arch" &&
   step build cmake --build "$build" -j "$jobs"; then
  step gpu-tests ctest --test-dir "$build" -L gpu --output-on-failure --timeout 1800 --no-tests=error
  # With several GPUs, the suite again with every test context on the last device while the test
  # threads keep device 0 current (tests/gpu/gpu_testing.h: QUIVER_TEST_DEVICE).
  gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
  if [[ "$gpus" -ge 2 ]]; then
    step gpu-tests-last-device env QUIVER_TEST_DEVICE=last \
      ctest --test-dir "$build" -L gpu --output-on-failure --timeout 1800 --no-tests=error
  else
    summary+=("  SKIP  gpu-tests-last-device  one GPU")
  fi
  step other-tests ctest --test-dir "$build" -LE gpu --output-on-failure --timeout 1800 -j 8

  gpu_test="$build/tests/quiver_gpu_test"
  if [[ -x "$gpu_test" ]]; then
    sanitizer="$(find_sanitizer)"
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
  metric_bench
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
