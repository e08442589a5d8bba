// The exact float32 key of exact_distances.h as device code, in its one order of summation, for
// every kernel that computes it (exact_distances.cu's, the k-means assignment's).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

// One step of the exact distance (exact_distances.h). No reassociation: each step depends on the last.
__device__ __forceinline__ float exact_step(bool l2, float a, float b, float acc) {
  if (l2) {
    const float t = a - b;
    return fmaf(t, t, acc);
  }
  return fmaf(a, b, acc);
}

// The exact key of query x against base row `row` (exact_distances.h): the one order of summation,
// whatever the width of the loads.
__device__ __forceinline__ float exact_key(const float* base, const float* x, int64_t dim, int32_t row, bool l2,
                                           bool vec4) {
  const float* y = base + int64_t(row) * dim;
  float acc = 0.f;
  if (vec4) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
    const int64_t n4 = dim / 4;
    auto step4 = [&](const float4& a, const float4& b) {
      acc = exact_step(l2, a.x, b.x, acc);
      acc = exact_step(l2, a.y, b.y, acc);
      acc = exact_step(l2, a.z, b.z, acc);
      acc = exact_step(l2, a.w, b.w, acc);
    };
    // The row's loads go kBatch at a time ahead of the steps that use them: one load after another
    // waited out a memory latency per 4 dimensions (finish_small's 10 us at dim 128). Same order of
    // summation either way.
    constexpr int kBatch = 8;
    int64_t c = 0;
    for (; c + kBatch <= n4; c += kBatch) {
      float4 b[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) b[j] = __ldg(y4 + c + j);
#pragma unroll
      for (int j = 0; j < kBatch; ++j) step4(x4[c + j], b[j]);
    }
    for (; c < n4; ++c) step4(x4[c], __ldg(y4 + c));
  } else {
    for (int64_t c = 0; c < dim; ++c) acc = exact_step(l2, x[c], __ldg(y + c), acc);
  }
  return l2 ? acc : -acc;
}

}  // namespace quiver::gpu
