// The per-row tests the metric scans share (metric_scan.cu, sss_batched.cu): the filter and the
// pruning bounds, conservative by the space's relative slack (metric_scan.h), so that every scan
// prunes by the same rule and none drops a row whose computed distance is within the radius; and
// where a hit goes in its query's buffer.
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

// Stores hit number `at` of query (block) o, (row, d), in o's buffer: at hit_offset[o] (else
// o * hit_capacity), if within hit_capacities[o] (else hit_capacity); past it, only the count (kept
// by the caller) records it.
__device__ __forceinline__ void store_hit(const ScanArgs& a, int64_t o, unsigned long long at, int32_t row, float d) {
  const int64_t capacity = a.hit_capacities != nullptr ? a.hit_capacities[o] : a.hit_capacity;
  if (at >= static_cast<unsigned long long>(capacity)) return;
  const int64_t slot = (a.hit_offset != nullptr ? a.hit_offset[o] : o * a.hit_capacity) + int64_t(at);
  a.hit_rows[slot] = row;
  a.hit_distances[slot] = d;
}

}  // namespace quiver::gpu::metric_space
