// The bias bounds of select_bias_bound.h: one thread a slot of 8 columns.
#include "cuda/select/select_bias_bound.h"

#include "cuda/core/error.h"

namespace quiver::gpu::detail {

namespace {

constexpr int kBoundThreads = 256;

__global__ void __launch_bounds__(kBoundThreads) bias_bound_kernel(const float* bias, int64_t cols, float* bound) {
  const int64_t slot = int64_t(blockIdx.x) * kBoundThreads + threadIdx.x;
  const int64_t c0 = slot * kBiasSlotCols;
  if (c0 >= cols) return;
  float m = __int_as_float(0x7fffffff);  // NaN: fminf takes the other operand
#pragma unroll
  for (int i = 0; i < kBiasSlotCols; ++i)
    if (c0 + i < cols) m = fminf(m, __ldg(bias + c0 + i));
  bound[slot] = m;
}

}  // namespace

void launch_bias_bound(const float* bias, int64_t cols, float* bound, cudaStream_t stream) {
  const int64_t slots = bias_bound_count(cols);
  if (slots == 0) return;
  const int64_t blocks = (slots + kBoundThreads - 1) / kBoundThreads;
  bias_bound_kernel<<<dim3(static_cast<unsigned>(blocks)), kBoundThreads, 0, stream>>>(bias, cols, bound);
  QV_LAUNCH_CHECK("bias_bound_kernel");
}

}  // namespace quiver::gpu::detail
