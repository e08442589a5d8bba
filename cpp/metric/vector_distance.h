// True metric distances between float vectors, for the metric-space indexes (cpp/metric/): they obey
// the triangle inequality, so L2 is the Euclidean distance itself, not its square as elsewhere.
// Deterministic: one summation order, the same on every call and at every SIMD level.
#pragma once

#include <cstdint>

#include "cpp/core/metric.h"

namespace quiver {

// sqrt(sum (x_i - y_i)^2) over dim floats.
float euclidean(const float* x, const float* y, int64_t dim);
// sum |x_i - y_i|.
float l1_distance(const float* x, const float* y, int64_t dim);
// max |x_i - y_i| (0 when dim == 0).
float linf_distance(const float* x, const float* y, int64_t dim);

// The distance of metric m: Metric::l2 (Euclidean), l1 or linf. Throws invalid_argument for any other
// metric (inner product and cosine are no metrics; edit distance is over strings, edit_distance.h).
float metric_distance(Metric m, const float* x, const float* y, int64_t dim);

}  // namespace quiver
