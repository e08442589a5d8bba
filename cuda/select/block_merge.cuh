// BlockSelect's last step, shared by the selection kernels (select_kernel.cuh, ivf/row_select_kernel.cuh):
// the warp queues of one task meet in shared memory and are merged pairwise into its first warp's.
#pragma once

#include "cuda/select/network.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu::detail {

// `warps` warps (a power of two) hold one task's queues; this one is the task's warp `sub` and keeps
// its queue at `slot` (its warp index in the block) of sk/sv (kCapacity entries per slot). At step s,
// warp sub (sub % 2s == 0) merges the queue of warp sub + s into its own: the first stage of merge-odd
// against the other queue read in reverse (no shuffles), then the rest of the network. Reads and
// writes of one step touch different slots. Every thread of the block calls this (it has barriers);
// afterwards warp sub == 0 holds the task's result and shared memory is free again.
template <class M, int KR, int T>
__device__ __forceinline__ void merge_block_queues(WarpSelect<M, KR, T>& ws, float* sk, typename M::Val* sv,
                                                   int slot, int sub, int warps, int lane) {
  using V = typename M::Val;
  constexpr int K = KR * kWarpSize;
#pragma unroll
  for (int r = 0; r < KR; ++r) {
    sk[slot * K + r * kWarpSize + lane] = ws.wk[r];
    sv[slot * K + r * kWarpSize + lane] = ws.wv[r];
  }
  __syncthreads();
  for (int s = 1; s < warps; s *= 2) {
    if (sub % (2 * s) == 0) {
      const float* ok = sk + (slot + s) * K;
      const V* ov = sv + (slot + s) * K;
#pragma unroll
      for (int j = 0; j < KR; ++j) {
        const float other_k = ok[j * kWarpSize + (kWarpSize - 1 - lane)];
        const V other_v = ov[j * kWarpSize + (kWarpSize - 1 - lane)];
        if (M::before(other_k, other_v, ws.wk[KR - 1 - j], ws.wv[KR - 1 - j])) {
          ws.wk[KR - 1 - j] = other_k;
          ws.wv[KR - 1 - j] = other_v;
        }
      }
      net::merge_continue_impl<M, 0, KR, true>(ws.wk, ws.wv);
#pragma unroll
      for (int r = 0; r < KR; ++r) {
        sk[slot * K + r * kWarpSize + lane] = ws.wk[r];
        sv[slot * K + r * kWarpSize + lane] = ws.wv[r];
      }
    }
    __syncthreads();
  }
}

}  // namespace quiver::gpu::detail
