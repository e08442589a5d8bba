// The settings of the approximate k-NN graph build for a recall target, and when the exact build is
// the better choice. The numbers come from measurements (see approximate_plan.cpp).
#pragma once

#include <cstdint>

#include "cpp/core/metric.h"

namespace quiver {

struct ApproximatePlan {
  int64_t capacity;    // candidates kept per point (>= k): a longer list than k helps NN-descent
  int64_t lists;       // k-means lists of the inverted file
  int64_t probes;      // lists searched per list
  int64_t iterations;  // NN-descent iterations at most
  int64_t sample;      // NN-descent samples per point and iteration
  double delta;        // NN-descent stops below delta * n * capacity changes
};

// n >= 2, 1 <= k < n, 0 < target_recall <= 1.
ApproximatePlan plan_approximate(Metric metric, int64_t n, int64_t k, double target_recall);

// The automatic method's limit: exact while n * n * dim is at most this.
double exact_work_limit(bool gpu);

}  // namespace quiver
