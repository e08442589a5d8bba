// What the IVF selections share (row_select_kernel.cuh, and the IVF-PQ scan that selects as it scans,
// ivf_pq/pq_scan_kernel.cuh): how a pair enters a queue (NaN and the filter), and how a task's first
// warp writes its k best: the search's results (row_select.h's RowSelectFinal) or the candidates
// (keys and slots) of one task for a later pass.
#pragma once

#include <cstdint>

#include "cuda/ivf/row_select.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu::detail {

// Offers one (key, slot) pair per lane to the warp's queue: a NaN key never enters, and a slot the
// filter (a bitset over slots, or null) excludes is dropped; the bitset is read only for pairs the
// queue would keep. Every lane calls it; it runs the queue's merge when needed, so a kernel keeps
// one call site (the merge networks are inlined where called).
template <class WS>
__device__ __forceinline__ void offer(WS& ws, const uint32_t* slot_filter, float key, int32_t slot) {
  constexpr int32_t kMissing = SentinelValue<int32_t>::value;
  if (!(key == key)) {
    key = kSentinelKey;
    slot = kMissing;
  }
  if (slot_filter != nullptr && slot != kMissing && ws.accepts(key, slot) &&
      !((__ldg(slot_filter + (slot >> 5)) >> (slot & 31)) & 1u)) {
    key = kSentinelKey;
    slot = kMissing;
  }
  if (ws.insert(key, slot)) ws.merge_thread_queues();
}

// ||x||^2 of a query row, summed by one warp (IVF-Flat's L2 keys lack it).
__device__ __forceinline__ float warp_row_norm(const float* x, int64_t dim, int lane) {
  float norm = 0.f;
  for (int64_t i = lane; i < dim; i += kWarpSize) norm = fmaf(x[i], x[i], norm);
#pragma unroll
  for (int d = kWarpSize / 2; d > 0; d /= 2) norm += __shfl_xor_sync(kFullWarp, norm, d);
  return norm;
}

// The results of `row` from a finished warp queue (ascending): see RowSelectFinal.
template <int KR>
__device__ __forceinline__ void write_final(const float (&wk)[KR], const int32_t (&wv)[KR], const RowSelectFinal& f,
                                            int64_t row, int64_t k, int lane) {
  constexpr int32_t kMissing = SentinelValue<int32_t>::value;
  const float norm = f.queries != nullptr ? warp_row_norm(f.queries + row * f.dim, f.dim, lane) : 0.f;
  float* out_d = f.distances + row * k;
  int64_t* out_i = f.ids + row * k;
#pragma unroll
  for (int r = 0; r < KR; ++r) {
    const int64_t e = int64_t(r) * kWarpSize + lane;
    if (e < k) {
      const int32_t slot = wv[r];
      if (slot == kMissing) {
        out_d[e] = f.l2 ? kSentinelKey : -kSentinelKey;
        out_i[e] = -1;
      } else {
        out_d[e] = f.l2 ? fmaxf(wk[r] + norm, 0.f) : -wk[r];
        out_i[e] = f.slot_ids != nullptr ? f.slot_ids[slot] : int64_t(slot);
      }
    }
  }
}

// A task's candidates: keys and slots at task * k.
template <int KR>
__device__ __forceinline__ void write_candidates(const float (&wk)[KR], const int32_t (&wv)[KR], float* out_keys,
                                                 int32_t* out_slots, int64_t task, int64_t k, int lane) {
#pragma unroll
  for (int r = 0; r < KR; ++r) {
    const int64_t e = int64_t(r) * kWarpSize + lane;
    if (e < k) {
      out_keys[task * k + e] = wk[r];
      out_slots[task * k + e] = wv[r];
    }
  }
}

}  // namespace quiver::gpu::detail
