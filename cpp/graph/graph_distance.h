// The distance kernels of graph search and graph construction, as keys where smaller is closer:
// squared L2 for L2, minus the inner product for inner product and cosine (cosine vectors are
// normalised). Unlike distance/vectors.h (whose kernels are bit-identical to the portable loops for
// exact re-ranking), these use fused multiply-adds and several accumulators: graph search computes
// one distance at a time and their latency is what it waits on.
#pragma once

#include <cstdint>

#include "cpp/core/metric.h"

namespace quiver {

using KeyFn = float (*)(const float* x, const float* y, int64_t dim);

float l2_key_portable(const float* x, const float* y, int64_t dim);
float ip_key_portable(const float* x, const float* y, int64_t dim);
float l2_key_avx2(const float* x, const float* y, int64_t dim);
float ip_key_avx2(const float* x, const float* y, int64_t dim);
float l2_key_avx512(const float* x, const float* y, int64_t dim);
float ip_key_avx512(const float* x, const float* y, int64_t dim);

// The fastest kernel for the metric on this processor (core/simd_level.h; QUIVER_SIMD narrows it).
KeyFn search_key(Metric metric);

// The key graph pruning compares: squared L2 for L2 and for cosine (on normalised vectors it orders
// pairs as cosine does, and it is a metric, which occlusion needs), minus the inner product for
// inner product.
KeyFn prune_key(Metric metric);

// A search key back in the metric's units (qv_index_search's distances).
inline float key_to_distance(Metric metric, float key) { return metric == Metric::l2 ? key : -key; }

}  // namespace quiver
