#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, QUIVER_FUZZ=ON, clang, CPU-only) in build-fuzz/ and runs
# each for N seconds over a copy of its seed corpus (tests/fuzz/corpus/<target>; the checked-in
# corpus never grows). Prints executions, exec/s and coverage per target; a crash, leak, timeout or
# out-of-memory leaves its input in build-fuzz/fuzz-artifacts/<target>/ and fails the script.
#
# usage: scripts/fuzz.sh [--seconds N] [--coverage] [target...]     default: 60 s, every target
#   --coverage: afterwards, replay each target's final corpus (seeds plus what the run found) through
#   a build with clang's source coverage (build-fuzz-cov/) and print the line coverage of the
#   loaders: cpp/io and every file that parses saved indexes (the payload readers of each kind).
# environment: QUIVER_JOBS (build parallelism, default: number of cores)
# Reproduce a finding: build-fuzz/tests/fuzz/<target> build-fuzz/fuzz-artifacts/<target>/crash-...
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

seconds=60
coverage=0
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seconds=*) seconds="${1#--seconds=}"; shift ;;
    --coverage) coverage=1; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --seconds needs a whole number" >&2; exit 2; }
all=(fuzz_load_buffer fuzz_descriptor fuzz_texmex fuzz_npy fuzz_idx)
[[ ${#targets[@]} -gt 0 ]] || targets=("${all[@]}")

# The longest input worth trying: a little above the largest seed (saved indexes are a few KB).
max_len() {
  case "$1" in
    fuzz_load_buffer) echo 24576 ;;
    fuzz_descriptor) echo 128 ;;
    *) echo 4096 ;;
  esac
}

jobs="${QUIVER_JOBS:-$(nproc 2>/dev/null || echo 2)}"
build="$root/build-fuzz"
t_start=$(date +%s)
mkdir -p "$build"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DQUIVER_FUZZ=ON -DQUIVER_CUDA=OFF \
  -DQUIVER_BUILD_TESTS=OFF -DQUIVER_BUILD_TOOLS=OFF -DQUIVER_BUILD_EXAMPLES=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; echo "fuzz.sh: configure failed" >&2; exit 1; }
cmake --build "$build" -j "$jobs" --target "${targets[@]}" || { echo "fuzz.sh: build failed" >&2; exit 1; }
t_built=$(date +%s)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
summary=()
for t in "${targets[@]}"; do
  seeds="$root/tests/fuzz/corpus/$t"
  [[ -d "$seeds" ]] || { echo "fuzz.sh: no corpus $seeds" >&2; failed+=("$t"); continue; }
  mkdir -p "$work/$t" "$build/fuzz-artifacts/$t"
  cp -r "$seeds/." "$work/$t/"
  log="$build/fuzz-artifacts/$t.log"
  echo "== $t: $seconds s (log: $log)"
  # -timeout: one input running 10 s is a hang; -rss_limit_mb/-malloc_limit_mb: a loader asking for
  # more than 2 GB from a few KB of input is the bug the issue names (sizes unchecked before allocating).
  "$build/tests/fuzz/$t" "$work/$t" -max_total_time="$seconds" -max_len="$(max_len "$t")" \
    -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/fuzz-artifacts/$t/" > "$log" 2>&1
  rc=$?
  done_line="$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)"
  execs="$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')"
  speed="$(grep -E '^stat::average_exec_per_sec' "$log" | awk '{print $2}')"
  cov="$(sed -nE 's/.* cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/cov \1, features \2, corpus \3/p' <<<"$done_line")"
  if [[ $rc -ne 0 ]]; then
    failed+=("$t")
    summary+=("$(printf '%-18s FAILED (exit %s): %s' "$t" "$rc" "$(ls "$build/fuzz-artifacts/$t" | head -3 | tr '\n' ' ')")")
    grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -5
  else
    summary+=("$(printf '%-18s %10s execs  %7s exec/s  %s' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}")")
  fi
done

# The loaders' line coverage over the corpora just fuzzed (seeds + findings), from a build with
# source coverage: each input replayed once (-runs=0), the profiles merged.
coverage_report() {
  local cov="$root/build-fuzz-cov" objects=() t
  mkdir -p "$cov"
  CC=clang CXX=clang++ cmake -S "$root" -B "$cov" -DQUIVER_FUZZ=ON -DQUIVER_CUDA=OFF \
    -DQUIVER_BUILD_TESTS=OFF -DQUIVER_BUILD_TOOLS=OFF -DQUIVER_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="-fprofile-instr-generate -fcoverage-mapping" \
    -DCMAKE_EXE_LINKER_FLAGS="-fprofile-instr-generate" > "$cov/configure.log" 2>&1 &&
    cmake --build "$cov" -j "$jobs" --target "${targets[@]}" > "$cov/build.log" 2>&1 ||
    { echo "fuzz.sh: coverage build failed ($cov/build.log)" >&2; return 1; }
  rm -rf "$work/profiles" && mkdir -p "$work/profiles"
  for t in "${targets[@]}"; do
    [[ -d "$work/$t" ]] || continue
    LLVM_PROFILE_FILE="$work/profiles/$t.profraw" "$cov/tests/fuzz/$t" -runs=0 "$work/$t" > /dev/null 2>&1
    objects+=(-object "$cov/tests/fuzz/$t")
  done
  llvm-profdata merge -sparse "$work"/profiles/*.profraw -o "$work/profiles/all.profdata" || return 1
  local loaders=(cpp/io/*.cpp cpp/index/*payload.cpp cpp/index/flat.cpp cpp/index/flat_gpu.cpp
                 cpp/index/ivf_index.cpp cpp/index/graph_index.cpp cpp/metric/metric_index.cpp
                 cpp/metric/list_of_clusters.cpp cpp/metric/sss.cpp cpp/metric/object_store.cpp
                 cpp/multi/composite_index.cpp cpp/multi/cluster_routes.cpp cpp/multi/routed_index.cpp)
  echo
  echo "== line coverage of the loaders (corpora of: ${targets[*]})"
  # llvm-cov report's columns: file (paths below their common folder), regions (3), functions (3),
  # lines: count, missed, cover.
  # The cpp/io rows are summed on the way.
  llvm-cov report "${objects[@]:1}" -instr-profile="$work/profiles/all.profdata" "${loaders[@]}" |
    awk '$1 !~ /^(-|Filename)/ && NF >= 10 {
           printf "  %-34s %6s lines, %6s missed, %8s\n", $1, $8, $9, $10
           if ($1 ~ /(^|\/)io\//) { io_lines += $8; io_missed += $9 }
         }
         END { if (io_lines > 0) printf "  cpp/io alone: %.2f%% of %d lines\n", 100 * (io_lines - io_missed) / io_lines, io_lines }'
}

[[ $coverage -eq 1 ]] && coverage_report

t_end=$(date +%s)
echo
echo "fuzz.sh: ${seconds} s a target, clang $(clang --version | sed -nE '1s/.*version ([0-9.]+).*/\1/p'), $(nproc) cores"
printf '  %s\n' "${summary[@]}"
echo "  build $((t_built - t_start)) s, fuzzing $((t_end - t_built)) s, total $((t_end - t_start)) s"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: FAILED: ${failed[*]} (inputs in build-fuzz/fuzz-artifacts/)"
  exit 1
fi
echo "fuzz.sh: no crashes, leaks, timeouts or out-of-memory"
