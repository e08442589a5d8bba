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

// The three metrics' steps: a component's term added to a lane's partial result, and two partial
// results joined.
struct L2Terms {
  static __device__ __forceinline__ float add(float acc, float q, float x) {
    const float diff = q - x;
    return fmaf(diff, diff, acc);
  }
  static __device__ __forceinline__ float join(float a, float b) { return a + b; }
};
struct L1Terms {
  static __device__ __forceinline__ float add(float acc, float q, float x) { return acc + fabsf(q - x); }
  static __device__ __forceinline__ float join(float a, float b) { return a + b; }
};
struct LinfTerms {
  static __device__ __forceinline__ float add(float acc, float q, float x) { return fmaxf(acc, fabsf(q - x)); }
  static __device__ __forceinline__ float join(float a, float b) { return fmaxf(a, b); }
};

// kPairs distances d(q[i], x[i]) by the team, out[i]: each exactly as one alone, with every pair's
// loads in flight together (a distance waits on memory once for all of them).
template <class Terms, int kPairs>
__device__ __forceinline__ void team_distances(const float* const* q, const float* const* x, int dim, int member,
                                               int team, float* out) {
  float acc[kPairs];
#pragma unroll
  for (int i = 0; i < kPairs; ++i) acc[i] = 0.0f;
  for (int d = member; d < dim; d += team) {
#pragma unroll
    for (int i = 0; i < kPairs; ++i) acc[i] = Terms::add(acc[i], q[i][d], __ldg(x[i] + d));
  }
  for (int offset = team / 2; offset > 0; offset /= 2) {
#pragma unroll
    for (int i = 0; i < kPairs; ++i) acc[i] = Terms::join(acc[i], __shfl_xor_sync(kAllLanes, acc[i], offset));
  }
#pragma unroll
  for (int i = 0; i < kPairs; ++i) out[i] = acc[i];
}

// d(q[i], x[i]) for `metric` (l2: Euclidean, not squared; l1; linf), i < kPairs, into out[i]. Every
// lane of the warp must call it (the shuffles take the whole warp); lanes of a team pass the same q
// and x (x may be anything readable for a team without a candidate: its result is then ignored).
// Every lane of the team gets the same values.
template <int kPairs>
__device__ __forceinline__ void vector_distances(Metric metric, const float* const* q, const float* const* x, int dim,
                                                 int member, int team, float* out) {
  if (metric == Metric::l2) {
    team_distances<L2Terms, kPairs>(q, x, dim, member, team, out);
#pragma unroll
    for (int i = 0; i < kPairs; ++i) out[i] = sqrtf(out[i]);
  } else if (metric == Metric::l1) {
    team_distances<L1Terms, kPairs>(q, x, dim, member, team, out);
  } else {
    team_distances<LinfTerms, kPairs>(q, x, dim, member, team, out);
  }
}

// d(q, x), as vector_distances.
__device__ __forceinline__ float vector_distance(Metric metric, const float* q, const float* x, int dim, int member,
                                                 int team) {
  float d;
  vector_distances<1>(metric, &q, &x, dim, member, team, &d);
  return d;
}

}  // namespace quiver::gpu::metric_space
