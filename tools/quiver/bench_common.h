// What `quiver bench` and `quiver bench --distributed` (dist_bench.h) share: the protocol's constants, the
// parameter sweep, a run's settings and measured rows, and the JSON line written per row.
#pragma once

#include <quiver/quiver.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cli.h"
#include "json.h"

namespace qvtool {

constexpr int64_t kRecallDepth = 10;  // the protocol's recall@10
constexpr int kProtocolRepeats = 5;   // BENCHMARKS.md: median of at least 5 runs

// One point of the parameter sweep; 0 leaves the parameter at the index's default.
struct SweepPoint {
  int64_t nprobe = 0;
  int64_t refine = 0;
  int64_t width = 0;  // graph indexes' search_width
};

// "nprobe=8,refine=2", "" for the index's defaults.
std::string point_label(const SweepPoint &p);

// The search parameters of one point, with the GPU arithmetic of --mode.
qv_search_params_t search_params(const SweepPoint &p, const std::string &mode);

// The sweep: --refine factors (outer) x --nprobe values x --width values; an IVF descriptor without
// --nprobe gets the default powers of two. Values the descriptor cannot take fail here (UsageError),
// before minutes of building.
std::vector<SweepPoint> sweep_points(const Options &o, const std::string &descriptor);

struct BenchSetup {
  std::string dataset, descriptor, device, gpu;  // device: "cpu", "cuda:0" or "cuda:0,1,2,3"
  qv_metric_t metric;
  std::string mode;  // the GPU's arithmetic (--mode)
  int64_t n, d, nq, k, ntrain;
  int threads, repeats;
  double train_s, add_s;
  // The built index's memory (qv_index_info); negative when unknown (left out of the JSON line).
  int64_t host_bytes = -1, device_bytes = -1;
  double build_s() const { return train_s + add_s; }
};

struct BenchRow {
  SweepPoint point;
  int64_t batch;
  double search_s;  // median seconds per batch
  double recall10;  // NaN when k < 10
  double recall_k;
  int64_t runs;  // timed runs (throughput) or timed batches (latency) behind the median
};

// One measurement as a JSON object (bench/plot_curves.py reads these); callers may add keys before
// writing it as one line.
JsonObject bench_json(const BenchSetup &s, const BenchRow &r, const std::string &command);

}  // namespace qvtool
