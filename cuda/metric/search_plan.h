// What range_search.cu and knn_search.cu share beyond the scan: the method's pruning, the tiles of
// queries, and the argument checks.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "cpp/backend/gpu_metric.h"
#include "cpp/core/error.h"
#include "cuda/metric/metric_device.h"
#include "cuda/metric/metric_scan.h"

namespace quiver::gpu::metric_space {

// Queries searched together: one block each (more would only queue), their per-query buffers
// sized for this many.
constexpr int64_t kMaxTileQueries = 1024;

inline float float_infinity() { return std::numeric_limits<float>::infinity(); }

// The pruning of `method`, checking that its tables were uploaded.
inline Prune prune_of(const MetricDevice& device, MetricMethod method) {
  switch (method) {
    case MetricMethod::brute_force: return Prune::none;
    case MetricMethod::list_of_clusters:
      require(device.has_lc, "List of Clusters search: its tables were not uploaded");
      return Prune::list_of_clusters;
    case MetricMethod::sss:
      require(device.has_sss, "SSS search: its tables were not uploaded");
      return Prune::sss;
  }
  fail(Status::invalid_argument, "metric search method ", int32_t(method), " is not brute force (0), List of ",
       "Clusters (1) or SSS (2)");
}

// The next tile of queries from `first`: up to max_queries whose bytes (fixed per query plus the
// query's scratch) stay within `budget` (one query at least).
inline int64_t tile_end(const MetricScan& scan, int64_t first, int64_t nq, int64_t fixed_bytes, int64_t budget,
                        int64_t max_queries = kMaxTileQueries) {
  int64_t last = first, used = 0;
  while (last < nq && last - first < max_queries) {
    const int64_t need = fixed_bytes + scan.scratch_bytes(last);
    if (last > first && used + need > budget) break;
    used += need;
    ++last;
  }
  return last;
}

// Distances from each query of a tile to rows (a row list of `count` rows, e.g. the LC centres or
// SSS pivots), every row, no filter: slots x count floats at out.
inline void raw_distances(MetricScan& scan, ScanArgs args, const std::vector<int64_t>& block_queries,
                          const int32_t* row_list, int64_t count, float* out, int64_t budget) {
  args.begin = 0;
  args.end = count;
  args.row_list = row_list;
  args.stride_count = 0;
  args.prune = Prune::none;
  args.radius = float_infinity();
  args.radius_at = nullptr;
  args.filter = nullptr;
  args.keys = out;
  args.ld = count;
  args.hit_count = nullptr;
  args.evaluations = nullptr;
  scan.launch(args, block_queries, budget);
}

// A tile's distances to the List of Clusters centres (and where each query's scan stops) or to the
// SSS pivots, computed once and wired into args for the tile's scans; they live as long as this.
struct MethodDistances {
  PoolBuffer<float> centres, pivots;
  PoolBuffer<int32_t> stop;
};

inline MethodDistances method_distances(MetricScan& scan, ScanArgs& args, const MetricDevice& device, bool lc,
                                        bool sss, const std::vector<int64_t>& block_queries, DevicePool& pool,
                                        int64_t budget) {
  const int64_t slots = static_cast<int64_t>(block_queries.size());
  MethodDistances d;
  if (lc) {
    d.centres = PoolBuffer<float>(pool, slots * device.clusters);
    raw_distances(scan, args, block_queries, device.centre_rows.get(), device.clusters, d.centres.get(), budget);
    d.stop = PoolBuffer<int32_t>(pool, slots);
    args.centre_distances = d.centres.get();
    args.stop = d.stop.get();
    scan.lc_stop(args, slots, d.stop.get());
  }
  if (sss) {
    d.pivots = PoolBuffer<float>(pool, slots * device.pivots);
    raw_distances(scan, args, block_queries, device.pivot_rows.get(), device.pivots, d.pivots.get(), budget);
    args.pivot_distances = d.pivots.get();
  }
  return d;
}

}  // namespace quiver::gpu::metric_space
