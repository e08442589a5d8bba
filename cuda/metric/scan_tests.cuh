// The per-row tests the metric scans share (metric_scan.cu, sss_batched.cu): the filter and the
// pruning bounds, conservative by the space's relative slack (metric_scan.h), so that every scan
// prunes by the same rule and none drops a row whose computed distance is within the radius.
#pragma once

#include <cstdint>

#include "cuda/metric/metric_scan.h"

namespace quiver::gpu::metric_space {

// a > b beyond the rounding the slack covers (a, b >= 0). An infinite b is never exceeded.
__device__ __forceinline__ bool beyond(float a, float b, float slack) {
  return slack > 0.0f ? a > b + slack * (a + b) : a > b;
}

// SSS: |d(x, p) - d(q, p)| > r, beyond the rounding of both distances, excludes x (triangle
// inequality). An infinite radius excludes nothing.
__device__ __forceinline__ bool pivot_excludes(float table, float pivot, float radius, float slack) {
  const float gap = fabsf(table - pivot);
  return slack > 0.0f ? gap > radius + slack * (table + pivot + radius) : gap > radius;
}

// Whether the filter lets `row` through (no filter: every row).
__device__ __forceinline__ bool allowed(const ScanArgs& a, int32_t row) {
  return a.filter == nullptr || (int64_t(row) < a.filter_bits && ((a.filter[row >> 3] >> (row & 7)) & 1));
}

}  // namespace quiver::gpu::metric_space
