// The sample thresholds of select_sample.h: one warp a row, its sample through a small WarpSelect.
#include "cuda/select/select_sample.h"

#include <cuda_fp16.h>

#include "cuda/core/error.h"
#include "cuda/select/select_prefilter.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu::detail {

namespace {

constexpr int kSampleThreads = 256;
constexpr int kSampleWarps = kSampleThreads / kWarpSize;

// A 16-bit key as a float: bf16 is a float's upper half; fp16 converts exactly.
template <bool KBF>
__device__ __forceinline__ float half_bits_value(uint16_t bits) {
  if (KBF) return __uint_as_float(uint32_t(bits) << 16);
  return __half2float(__ushort_as_half(bits));
}

template <bool K16, bool KBF>
__global__ void __launch_bounds__(kSampleThreads) sample_kernel(const SampleRequest r) {
  using M = WarpLanes<int32_t, false>;
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int64_t row = int64_t(blockIdx.x) * kSampleWarps + threadIdx.x / kWarpSize;
  if (row == 0 && lane == 0 && r.zero != nullptr) *r.zero = 0;
  if (row >= r.rows) return;  // the whole warp leaves together
  const float* x = K16 ? nullptr : r.keys + row * r.ld;
  const uint16_t* x16 = K16 ? static_cast<const uint16_t*>(r.keys16) + row * r.ld : nullptr;
  WarpSelect<M, kSampleQueueRegs, 3> ws;
  ws.reset(r.rank);
  constexpr int kPerRun = kSampleRun / kWarpSize;
  constexpr int kLoad = 16;  // keys a lane loads at once (kLoad / kPerRun runs): one wait per batch
  static_assert(kSampleRuns % (kLoad / kPerRun) == 0, "whole batches");
#pragma unroll 1
  for (int r0 = 0; r0 < kSampleRuns; r0 += kLoad / kPerRun) {
    float key[kLoad];
#pragma unroll
    for (int e = 0; e < kLoad; ++e) {
      const int run = r0 + e / kPerRun;
      const int64_t col = (r.cols - kSampleRun) * run / (kSampleRuns - 1) + (e % kPerRun) * kWarpSize + lane;
      const float raw = K16 ? half_bits_value<KBF>(__ldg(x16 + col)) : __ldg(x + col);
      key[e] = r.bias != nullptr ? fmaf(r.in_scale, raw, __ldg(r.bias + col)) : r.in_scale * raw;
    }
    // Only keys below the limit are offered, each lane its own in turn (as the selection does):
    // after the first batch few are.
    unsigned mine = 0;
#pragma unroll
    for (int e = 0; e < kLoad; ++e) mine |= (key[e] <= ws.limit_k ? 1u : 0u) << e;  // NaN never passes
#pragma unroll 1
    while (M::any(mine != 0)) {
      const bool has = mine != 0;
      const int e = has ? __ffs(mine) - 1 : 0;
      mine &= mine - 1;
      float k = key[0];
#pragma unroll
      for (int j = 1; j < kLoad; ++j) k = e == j ? key[j] : k;  // static register indices
      // Ids only order ties within the sample.
      const int32_t id = has ? r0 * kSampleRun + e * kWarpSize + lane : SentinelValue<int32_t>::value;
      if (ws.insert(has ? k : kSentinelKey, id)) ws.merge_thread_queues();
    }
  }
  ws.finish();
  if (lane == 0) r.thresholds[row] = ws.limit_k;
}

}  // namespace

void launch_sample_thresholds(const SampleRequest& r, cudaStream_t stream) {
  if (r.rows == 0) return;
  const int64_t blocks = (r.rows + kSampleWarps - 1) / kSampleWarps;
  const dim3 grid(static_cast<unsigned>(blocks));
  if (r.keys16 == nullptr) {
    sample_kernel<false, false><<<grid, kSampleThreads, 0, stream>>>(r);
  } else if (r.bf16) {
    sample_kernel<true, true><<<grid, kSampleThreads, 0, stream>>>(r);
  } else {
    sample_kernel<true, false><<<grid, kSampleThreads, 0, stream>>>(r);
  }
  QV_LAUNCH_CHECK("sample_kernel");
}

}  // namespace quiver::gpu::detail
