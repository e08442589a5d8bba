#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, QUIVER_FUZZ=ON, clang, CPU-only) in build-fuzz/ and runs
# each for N seconds over a copy of its seed corpus (tests/fuzz/corpus/<target>; the checked-in
# corpus never grows). Prints executions, exec/s and coverage per target; a crash, leak, timeout or
# out-of-memory leaves its input in build-fuzz/fuzz-artifacts/<target>/ and fails the script.
#
# usage: scripts/fuzz.sh [--seconds N] [target...]     default: 60 s, every target
# environment: QUIVER_JOBS (build parallelism, default: number of cores)
# Reproduce a finding: build-fuzz/tests/fuzz/<target> build-fuzz/fuzz-artifacts/<target>/crash-...
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

seconds=60
targets=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --seconds=*) seconds="${1#--seconds=}"; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
