// The per-query selection state of the fused TF32 kernels (tf32_select.h), in shared memory: a
// sorted best list, an unordered pending list that keys within the query's limit join, and the
// limit itself (the kc-th best). One warp merges a full pending list into the best list.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "cuda/select/network.h"
#include "cuda/select/warp_lanes.cuh"

namespace quiver::gpu::tf32 {

constexpr int kList = kWarpSize;     // best entries of a query: one register of a warp
constexpr int kPending = kWarpSize;  // pending entries of a query: one register of a warp
constexpr int32_t kNoRow = std::numeric_limits<int32_t>::max();

// 4-byte words the lists of `queries` queries take.
constexpr int64_t lists_words(int64_t queries) { return queries * 2 * (kList + kPending) + queries * 2; }

struct QueryLists {
  float* best_keys;  // queries x kList, ascending by (key, row)
  int32_t* best_rows;
  float* pending_keys;  // queries x kPending, unordered
  int32_t* pending_rows;
  float* limits;  // the kc-th best key: what a key must not exceed to be offered
  int* counts;    // offers to the pending list so far (may exceed kPending: the excess was refused)

  // The lists of `queries` queries, laid out from `start` (lists_words(queries) words).
  __device__ static QueryLists place(float* start, int queries) {
    QueryLists l;
    l.best_keys = start;
    l.best_rows = reinterpret_cast<int32_t*>(l.best_keys + queries * kList);
    l.pending_keys = reinterpret_cast<float*>(l.best_rows + queries * kList);
    l.pending_rows = reinterpret_cast<int32_t*>(l.pending_keys + queries * kPending);
    l.limits = reinterpret_cast<float*>(l.pending_rows + queries * kPending);
    l.counts = reinterpret_cast<int*>(l.limits + queries);
    return l;
  }

  // Empty lists for query q, taking no key above `bound` (+inf: any); a query past the end (live
  // false) takes nothing. The list starts full of (bound, kNoRow), so its kc-th best (the limit) never
  // exceeds the bound; those entries come out where fewer rows were taken. Lane 0 writes the limit
  // and count that every lane reads later: a barrier (__syncwarp at least) must come between.
  __device__ __forceinline__ void reset(int q, bool live, int lane, float bound) const {
    best_keys[q * kList + lane] = bound;
    best_rows[q * kList + lane] = kNoRow;
    if (lane == 0) {
      limits[q] = live ? bound : -__int_as_float(0x7f800000);
      counts[q] = 0;
    }
  }

  // Offers (key, row) to query q's pending list: false when the list had no room (the key was
  // refused and must be offered again after a merge).
  __device__ __forceinline__ bool offer(int q, float key, int32_t row) const {
    const int slot = atomicAdd(&counts[q], 1);
    if (slot >= kPending) return false;
    pending_keys[q * kPending + slot] = key;
    pending_rows[q * kPending + slot] = row;
    return true;
  }

  // Merges query q's pending entries into its best list (one warp, all lanes), sets its limit to the
  // kc-th best and empties the pending list.
  __device__ __forceinline__ void merge(int q, int kc, int lane) const {
    using Lanes = WarpLanes<int32_t>;
    float key = best_keys[q * kList + lane];
    int32_t row = best_rows[q * kList + lane];
    const int count = min(counts[q], kPending);
    float other_key = lane < count ? pending_keys[q * kPending + lane] : __int_as_float(0x7f800000);
    int32_t other_row = lane < count ? pending_rows[q * kPending + lane] : kNoRow;
    net::sort_register<Lanes>(other_key, other_row);
    net::merge_keep_smallest<Lanes, 1, 1>(&key, &row, &other_key, &other_row);
    best_keys[q * kList + lane] = key;
    best_rows[q * kList + lane] = row;
    const float kth = __shfl_sync(kFullWarp, key, kc - 1);
    __syncwarp();  // every lane has read the count
    if (lane == 0) {
      limits[q] = kth;
      counts[q] = 0;
    }
  }

  // Writes query q's kc best (merging what is pending first) to keys / rows (one warp).
  __device__ __forceinline__ void write(int q, int kc, int lane, float* keys, int32_t* rows) const {
    // Lane 0 reset the count, other lanes offered: under independent thread scheduling nothing
    // orders those writes before this read but a barrier (a split with no rows has no other).
    __syncwarp();
    if (counts[q] > 0) merge(q, kc, lane);
    __syncwarp();
    if (lane < kc) {
      keys[lane] = best_keys[q * kList + lane];
      rows[lane] = best_rows[q * kList + lane];
    }
  }
};

// The bound query `query` of nq starts its lists at (reset): bounds[query * bounds_ld], or +inf
// without bounds and past the last query.
__device__ __forceinline__ float start_bound(const float* bounds, int64_t bounds_ld, int query, int nq) {
  return bounds != nullptr && query < nq ? bounds[query * bounds_ld] : __int_as_float(0x7f800000);
}

__device__ __forceinline__ bool allowed(const uint8_t* filter, int64_t filter_bits, int row) {
  return filter == nullptr || (row < filter_bits && ((filter[row >> 3] >> (row & 7)) & 1) != 0);
}

}  // namespace quiver::gpu::tf32
