#!/usr/bin/env bash
# What CI runs (.ci/run): installs what is missing, then
#   1. build/       Release, QUIVER_CUDA=AUTO (the CUDA backend compiles where nvcc is found),
#                   QUIVER_MPI=AUTO (libquiver_mpi where MPI is found: setup.sh installs Open MPI)
#   2. ctest        every suite but `gpu` (GPU tests also skip themselves without a device), the
#                   distributed index under mpirun -np 1, 2, 4 (label mpi) included
#   3. symbols      scripts/check_symbols.sh: libquiver.so exports exactly abi/symbols.txt
#      abi-release  scripts/check_abi.sh: the release library (the CUDA build where nvcc is found; its
#                   C API files carry DWARF) against abi/libquiver.abi
#      install      scripts/check_install.sh: install to a temporary prefix, build and run a consumer
#                   through find_package (both targets) and pkg-config (shared and --static)
#   4. build-asan/  CPU-only, AddressSanitizer + UndefinedBehaviorSanitizer, -O1
#   5. ctest        cpu, capi, header and examples suites under the sanitizers
#      tsan         build-tsan/: ThreadSanitizer over the concurrency tests (many threads, one index)
#      abi          scripts/check_abi.sh: build-asan's libquiver.so (with DWARF) against abi/libquiver.abi
#   6. bindings     scripts/check_parity.sh, cargo test (bindings/rust), go vet and go test -race
#                   (bindings/go), each when it exists
#   7. fuzz         scripts/fuzz.sh: each libFuzzer target (tests/fuzz) for 60 s (QUIVER_FUZZ_SECONDS)
# and prints a summary. Exits non-zero when any step fails; later steps still run where they can.
#
# usage: scripts/test.sh            environment: QUIVER_JOBS (default: number of cores)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

jobs="${QUIVER_JOBS:-$(nproc 2>/dev/null || echo 2)}"
t_start=$(date +%s)
summary=()
failed_steps=0
tests_passed=0
tests_failed=0

# step NAME COMMAND...: runs one step, times it and records PASS/FAIL.
step() {
  local name="$1"
  shift
  local t0 rc
  t0=$(date +%s)
  echo
  echo "==== $name: $*"
  "$@"
  rc=$?
  local dt=$(($(date +%s) - t0))
  if [[ $rc -eq 0 ]]; then
    summary+=("$(printf '  PASS  %-28s %5ss' "$name" "$dt")")
  else
    summary+=("$(printf '  FAIL  %-28s %5ss  (exit %s)' "$name" "$dt" "$rc")")
    failed_steps=$((failed_steps + 1))
  fi
  return $rc
}

skip() {
  summary+=("$(printf '  SKIP  %-28s        %s' "$1" "$2")")
  echo
  echo "==== $1: skipped ($2)"
}

# run_ctest DIR ARGS...: ctest with the suite totals added to the summary's test counts.
run_ctest() {
  local dir="$1"
  shift
  local log="$dir/ctest.log"
  ctest --test-dir "$dir" --output-on-failure --timeout 900 -j "$jobs" --no-tests=error "$@" 2>&1 |
    tee "$log"
  local rc=${PIPESTATUS[0]}
  local line total failed
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
  if [[ -n "$line" ]]; then
    failed=$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"$line")
    total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
    tests_passed=$((tests_passed + total - failed))
    tests_failed=$((tests_failed + failed))
  fi
  return $rc
}

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

# ---- setup: nothing else can work without it ----------------------------------------------------
if ! step setup scripts/setup.sh; then
  printf '%s\n' "${summary[@]}"
  echo "test.sh: FAILED (setup)"
  exit 1
fi
# A rustup toolchain is not on PATH in a non-login shell.
if [[ -d "$HOME/.cargo/bin" ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi

# ---- 1-3. the release build, its tests, the exported symbols -----------------------------------
build_ok=0
if step configure cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DQUIVER_CUDA=AUTO "${launcher[@]}" &&
   step build cmake --build build -j "$jobs"; then
  build_ok=1
  step tests run_ctest build -LE gpu
  step symbols scripts/check_symbols.sh build/libquiver.so
  step abi-release scripts/check_abi.sh build/libquiver.so
  step install scripts/check_install.sh build
else
  skip tests "the build failed"
  skip symbols "the build failed"
  skip abi-release "the build failed"
  skip install "the build failed"
fi

# ---- 4-5. the sanitizer build ------------------------------------------------------------------
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
if step configure-asan cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
       -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
       -DQUIVER_CUDA=OFF -DQUIVER_MPI=OFF "-DQUIVER_SANITIZE=address;undefined" -DQUIVER_BUILD_TOOLS=OFF \
       "${launcher[@]}" &&
   step build-asan cmake --build build-asan -j "$jobs"; then
  step tests-asan run_ctest build-asan -L 'cpu|capi|header|examples'
  step abi scripts/check_abi.sh build-asan/libquiver.so
else
  skip tests-asan "the sanitizer build failed"
  skip abi "the sanitizer build failed"
fi

# ---- 5b. the thread sanitizer: the concurrency tests (20 threads on one index, the pool) --------
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
if step configure-tsan cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
       -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
       -DQUIVER_CUDA=OFF -DQUIVER_MPI=OFF -DQUIVER_SANITIZE=thread -DQUIVER_BUILD_TOOLS=OFF \
       -DQUIVER_BUILD_EXAMPLES=OFF "${launcher[@]}" &&
   step build-tsan cmake --build build-tsan -j "$jobs" --target quiver_capi_test quiver_cpu_test; then
  step tests-tsan run_ctest build-tsan -R 'Concurren|ThreadPool'
else
  skip tests-tsan "the thread sanitizer build failed"
fi

# ---- 6. bindings ---------------------------------------------------------------------------------
if [[ -x scripts/check_parity.sh ]]; then
  step parity scripts/check_parity.sh   # every qv_ function is bound in Rust and in Go
fi
# HOOK (binding authors): the environment each binding's tests get. Both link the release build in
# build/: Rust links build/libquiver.a (QUIVER_LIB_DIR, which also holds quiver_link.txt), Go links
# build/libquiver.so through the #cgo lines in bindings/go (CFLAGS: include/ and build/include).
# Where the build made build/libquiver_mpi.so (Open MPI found), each binding's tests run a second time
# with its distributed index: cargo feature `mpi` (which links build/libquiver_mpi.so and
# build/libquiver.so, and libmpi) and go build tag `quiver_mpi`. They run as one process, an MPI
# singleton (no mpirun); Open MPI refuses root unless told, and CI machines run as root.
mpi_test_env() {
  local dirs mpi_lib_dir
  read -ra dirs <<<"$(mpicc --showme:libdirs 2>/dev/null)"
  mpi_lib_dir=$(IFS=:; echo "${dirs[*]}")
  mpi_lib_dir=${mpi_lib_dir:-/usr/lib/x86_64-linux-gnu/openmpi/lib}
  export LD_LIBRARY_PATH="$root/build:$mpi_lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}
if [[ -d bindings/rust ]]; then
  if [[ $build_ok -eq 1 ]] && command -v cargo >/dev/null 2>&1; then
    rust_test() {
      (cd bindings/rust &&
        QUIVER_LIB_DIR="$root/build" QUIVER_CUDA=AUTO CARGO_TARGET_DIR="$root/bindings/rust/target" \
          cargo test --offline --workspace)
    }
    step rust rust_test
    if [[ -f build/libquiver_mpi.so ]]; then
      rust_mpi_test() {
        (cd bindings/rust && mpi_test_env &&
          QUIVER_LIB_DIR="$root/build" QUIVER_CUDA=AUTO CARGO_TARGET_DIR="$root/bindings/rust/target" \
            cargo test --offline --workspace --features mpi)
      }
      step rust-mpi rust_mpi_test
    fi
  else
    skip rust "$([[ $build_ok -eq 1 ]] && echo "cargo not found" || echo "the build failed")"
  fi
fi
if [[ -d bindings/go ]]; then
  if [[ $build_ok -eq 1 ]] && command -v go >/dev/null 2>&1; then
    go_test() {
      (cd bindings/go &&
        GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=1 \
          LD_LIBRARY_PATH="$root/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
          go vet ./... && go test -race -count=1 ./...)
    }
    step go go_test
    if [[ -f build/libquiver_mpi.so ]]; then
      go_mpi_test() {
        (cd bindings/go && mpi_test_env &&
          export GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=1 &&
          go vet -tags quiver_mpi ./... && go test -race -count=1 -tags quiver_mpi ./...)
      }
      step go-mpi go_mpi_test
    fi
  else
    skip go "$([[ $build_ok -eq 1 ]] && echo "go not found" || echo "the build failed")"
  fi
fi
# END HOOK

# ---- 7. fuzzing: every libFuzzer target of tests/fuzz for 60 s over its seed corpus ----------------
if command -v clang++ >/dev/null 2>&1; then
  step fuzz scripts/fuzz.sh --seconds "${QUIVER_FUZZ_SECONDS:-60}"
else
  skip fuzz "clang++ not found"
fi

# ---- summary -------------------------------------------------------------------------------------
t_total=$(($(date +%s) - t_start))
echo
echo "==== summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc 2>/dev/null || echo '?') cores, ${t_total}s in all)"
printf '%s\n' "${summary[@]}"
if [[ $failed_steps -eq 0 ]]; then
  echo "test.sh: OK"
else
  echo "test.sh: FAILED ($failed_steps step(s))"
fi
echo "ctest: $tests_passed passed, $tests_failed failed"
[[ $failed_steps -eq 0 ]]
