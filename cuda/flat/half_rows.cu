// The 16-bit copy of a base's rows (half_rows.h).
#include "cuda/flat/half_rows.h"

#include <algorithm>

#include "cuda/core/error.h"
#include "cuda/flat/certify.cuh"
#include "cuda/select/warp_lanes.cuh"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
// A fixed grid: one atomic maximum a block.
constexpr int64_t kMaxBlocks = 1024;
constexpr float kHalfMax = 65504.f;

// A warp a row at a time, a lane every 32nd value: the row's squared norm and squared residual in
// double (each square and difference exact in double), their largest over the block's rows into
// stats[0] and stats[1]. The norms are the copy's own: the matrix's bound holds rows since removed.
__global__ void half_rows_kernel(const float* __restrict__ y, int64_t n, int dim, __half* __restrict__ out,
                                 unsigned* stats, unsigned* out_of_range) {
  __shared__ unsigned warp_max[2][kWarps];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  unsigned largest_norm = 0, largest_residual = 0;
  bool bad = false;
  for (int64_t row = int64_t(blockIdx.x) * kWarps + warp; row < n; row += int64_t(gridDim.x) * kWarps) {
    double norm = 0, residual = 0;
    for (int c = lane; c < dim; c += kWarpSize) {
      const float v = y[row * dim + c];
      const __half h = __float2half_rn(v);
      out[row * dim + c] = h;
      bad |= !(fabsf(v) <= kHalfMax);  // NaN too
      const double d = double(v) - double(__half2float(h));
      norm = fma(double(v), double(v), norm);
      residual = fma(d, d, residual);
    }
#pragma unroll
    for (int d = kWarpSize / 2; d > 0; d /= 2) {
      norm += __shfl_xor_sync(kFullWarp, norm, d);
      residual += __shfl_xor_sync(kFullWarp, residual, d);
    }
    largest_norm = max(largest_norm, upper_bits(norm));
    largest_residual = max(largest_residual, upper_bits(residual));
  }
  if (__any_sync(kFullWarp, bad) && lane == 0) *out_of_range = 1;
  if (lane == 0) {
    warp_max[0][warp] = largest_norm;
    warp_max[1][warp] = largest_residual;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kWarps; ++w) {
      largest_norm = max(largest_norm, warp_max[0][w]);
      largest_residual = max(largest_residual, warp_max[1][w]);
    }
    atomicMax(stats, largest_norm);
    atomicMax(stats + 1, largest_residual);
  }
}

}  // namespace

void launch_half_rows(const float* y, int64_t n, int64_t dim, __half* out, unsigned* stats, unsigned* out_of_range,
                      cudaStream_t stream) {
  if (n == 0) return;
  const auto blocks = static_cast<unsigned>(std::min(kMaxBlocks, (n + kWarps - 1) / kWarps));
  half_rows_kernel<<<blocks, kThreads, 0, stream>>>(y, n, static_cast<int>(dim), out, stats, out_of_range);
  QV_LAUNCH_CHECK("half_rows_kernel");
}

CertifyModel half_rows_model(bool l2, int64_t dim) {
  CertifyModel model = certify_model(false, l2, dim);
  model.rounded_inputs = true;
  return model;
}

}  // namespace quiver::gpu
