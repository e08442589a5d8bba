// True distances between float vectors on the device, computed by a team of T lanes (a power of two
// dividing the warp): lane i of the team sums components i, i + T, ... in order, then the team adds
// (or, for L-infinity, takes the maximum of) its partial results by a butterfly of shuffles.
//
// The result depends only on the vectors, the dimension and T, never on which search asks: T is a
// function of the dimension alone (team_size), so brute force, List of Clusters and SSS find the
// same float for the same pair and their results are identical, not merely close.
#pragma once

#include <cstdint>

#include "cpp/core/metric.h"

namespace quiver::gpu::metric_space {

constexpr int kWarpLanes = 32;
constexpr unsigned kAllLanes = 0xffffffffu;
// Components per lane the team size aims at: fewer lanes for short vectors, whose teams would
// otherwise idle in the reduction.
constexpr int64_t kComponentsPerLane = 8;

// Lanes per vector distance: the smallest power of two with at most kComponentsPerLane components
// a lane, 1 .. 32.
inline int team_size(int64_t dim) {
  int team = 1;
  while (team < kWarpLanes && int64_t(team) * kComponentsPerLane < dim) team *= 2;
  return team;
}

// d(q, x) for `metric` (l2: Euclidean, not squared; l1; linf). Every lane of the warp must call it
// (the shuffles take the whole warp); lanes of a team pass the same q and x (x may be anything
// readable for a team without a candidate: its result is then ignored). Every lane of the team gets
// the same value.
__device__ __forceinline__ float vector_distance(Metric metric, const float* q, const float* x, int dim,
                                                 int member, int team) {
  float acc = 0.0f;
  if (metric == Metric::l2) {
    for (int d = member; d < dim; d += team) {
      const float diff = q[d] - __ldg(x + d);
      acc = fmaf(diff, diff, acc);
    }
    for (int offset = team / 2; offset > 0; offset /= 2) acc += __shfl_xor_sync(kAllLanes, acc, offset);
    return sqrtf(acc);
  }
  if (metric == Metric::l1) {
    for (int d = member; d < dim; d += team) acc += fabsf(q[d] - __ldg(x + d));
    for (int offset = team / 2; offset > 0; offset /= 2) acc += __shfl_xor_sync(kAllLanes, acc, offset);
    return acc;
  }
  for (int d = member; d < dim; d += team) acc = fmaxf(acc, fabsf(q[d] - __ldg(x + d)));
  for (int offset = team / 2; offset > 0; offset /= 2) acc = fmaxf(acc, __shfl_xor_sync(kAllLanes, acc, offset));
  return acc;
}

}  // namespace quiver::gpu::metric_space
