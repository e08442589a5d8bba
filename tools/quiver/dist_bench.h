// quiver bench --distributed: the bench protocol over a distributed index (quiver_mpi.h), one shard per
// MPI rank, started as `mpirun -np N quiver bench --distributed ...`. Every rank reads the data set and
// adds its contiguous slice of the base rows (rank 0's first, so ids are base rows and the data set's
// ground truth applies); rank 0 times the searches, which every rank takes part in, and prints the rows.
// Needs a quiver built with MPI (QUIVER_MPI; the tool then defines QUIVER_TOOL_MPI); elsewhere
// --distributed is a usage error.
#pragma once

#include <quiver/quiver.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench_common.h"
#include "library.h"

namespace qvtool {

// What `quiver bench` parsed and checked (identically on every rank) before any work.
struct DistBenchConfig {
  std::string dataset;     // the --dataset argument
  std::string descriptor;  // --index
  qv_metric_t metric = QV_METRIC_L2;
  std::string mode;  // --mode
  int64_t k = 10, max_nq = 0, max_ntrain = 0;
  int repeats = kProtocolRepeats;
  std::vector<SweepPoint> sweep;
  std::optional<std::string> json_path;  // written by rank 0 only
  std::string command;
  qv_device_kind_t device = QV_DEVICE_AUTO;  // each rank's context: --device, --threads, --gpus
  int threads = 0;
  GpuList gpus;
};

// Throws UsageError unless this quiver was built with MPI.
void require_distributed();

// Initialises MPI (unless the process did), runs the benchmark on every rank, finalises MPI; returns the
// exit code. Errors: the root reports them (those of another rank too, naming it); the other ranks
// return 1 quietly.
int run_dist_bench(const DistBenchConfig &config);

}  // namespace qvtool
