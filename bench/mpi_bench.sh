#!/usr/bin/env bash
# Distributed index benchmark (quiver_mpi.h, bench/README.md "Several processes"): quiver bench
# --distributed under mpirun on this host, 1, 2, 4 ranks, one thread each:
#   strong scaling: synthetic N x 128 split over the ranks;
#   weak scaling:   N vectors per rank (N x ranks in all).
# Logs and JSON lines go to $OUT.
#
# usage: bench/mpi_bench.sh [N]   (default 50000)
#   environment: QUIVER_BUILD_DIR (default build, configured with MPI), OUT (default ./out),
#                INDEX (default Flat), RANKS (default "1 2 4")
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QUIVER_BUILD_DIR:-$root/build}"
OUT="${OUT:-$root/out}"
n="${1:-50000}"
index="${INDEX:-Flat}"
ranks="${RANKS:-1 2 4}"
tool="$build/bin/quiver"
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[[ -x "$tool" ]] || { echo "mpi_bench: $tool not found (build first)" >&2; exit 1; }
log="$OUT/mpi_bench.txt"
json="$OUT/mpi_bench.json"
: >"$log"
: >"$json"
data() {  # data N: a generated set of N x 128 vectors, 1000 queries, made once
  local dir="$OUT/mpi-synth-$1"
  [[ -f "$dir/gt.ivecs" ]] || "$tool" gen --n "$1" --d 128 --nq 1000 --seed 3 --device cpu --out "$dir" >/dev/null || exit 1
  echo "$dir"
}
run() {  # run SCALING RANKS DATA
  echo "== $1 scaling, $2 rank(s), $(basename "$3")" | tee -a "$log"
  mpirun -np "$2" --oversubscribe --bind-to none "$tool" bench --distributed --dataset "$3" --index "$index" \
    --device cpu --threads 1 --repeats 5 --json "$json" 2>&1 | tee -a "$log"
}
echo "mpi_bench: $(nproc) cores, $(mpirun --version | head -1)" | tee -a "$log"
for r in $ranks; do run strong "$r" "$(data "$n")"; done
for r in $ranks; do run weak "$r" "$(data $((n * r)))"; done
