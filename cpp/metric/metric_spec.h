// Metric-space index descriptors: "LC<b>" (List of Clusters, b objects a cluster besides its centre)
// and "SSS<alpha>" or "SSS<alpha>,P<p>" (SSS pivots, alpha in (0, 2], at most p pivots); "Flat" of
// a metric that only the metric-space kinds serve (L1, L-infinity, edit distance) is brute force.
#pragma once

#include <cstdint>
#include <string>

#include "cpp/backend/gpu_metric.h"

namespace quiver {

constexpr int64_t kMaxClusterSize = 65536;
constexpr int64_t kMaxPivots = 1024;
constexpr int64_t kDefaultPivots = 64;

struct MetricSpec {
  gpu::MetricMethod method = gpu::MetricMethod::brute_force;
  int64_t bucket = 0;     // LC
  float alpha = 0.0f;     // SSS
  int64_t max_pivots = 0;  // SSS
};

// True when the descriptor names a List of Clusters or SSS index; it is then parsed or refused.
bool is_metric_descriptor(const std::string& descriptor);

// Throws invalid_argument naming what is wrong.
MetricSpec parse_metric_descriptor(const std::string& descriptor);

}  // namespace quiver
