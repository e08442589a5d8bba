#include "cuda/flat/compute_modes.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cpp/core/error.h"
#include "cuda/core/error.h"
#include "cuda/select/select.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / kWarpSize;
// Grid-stride loops: enough blocks to fill any current GPU, few enough to launch cheaply.
constexpr int64_t kMaxBlocks = 65535;

unsigned blocks_for_warps(int64_t warps) {
  return static_cast<unsigned>(std::clamp<int64_t>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock, 1, kMaxBlocks));
}

__device__ inline void store_pair(__half2* out, float a, float b, int* overflow) {
  const __half2 h = __floats2half2_rn(a, b);
  if ((isfinite(a) && __hisinf(__low2half(h))) || (isfinite(b) && __hisinf(__high2half(h)))) *overflow = 1;
  *out = h;
}

__device__ inline void store_pair(__nv_bfloat162* out, float a, float b, int*) { *out = __floats2bfloat162_rn(a, b); }

// One warp per row; each lane writes pairs of values (ld is even), zeros past dim.
template <typename H2>
__global__ void to_half_kernel(const float* x, int64_t n, int64_t dim, int64_t ld, H2* out, int* overflow) {
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize; row < n; row += warps) {
    const float* r = x + row * dim;
    H2* o = out + row * (ld / 2);
    for (int64_t p = lane; p < ld / 2; p += kWarpSize) {
      const int64_t c = 2 * p;
      store_pair(o + p, c < dim ? r[c] : 0.f, c + 1 < dim ? r[c + 1] : 0.f, overflow);
    }
  }
}

// One warp per (query, candidate): lanes stride over the dimensions, then a butterfly sum.
__global__ void rerank_kernel(const float* base, const float* queries, int64_t dim, const int32_t* rows,
                              int64_t count, int64_t kc, bool l2, bool vec4, float* keys) {
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t i = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize; i < count; i += warps) {
    const int32_t row = rows[i];
    if (row == SentinelValue<int32_t>::value) {
      if (lane == 0) keys[i] = kSentinelKey;
      continue;
    }
    const float* x = queries + (i / kc) * dim;
    const float* y = base + int64_t(row) * dim;
    float sum = 0.f;
    if (vec4) {
      const float4* x4 = reinterpret_cast<const float4*>(x);
      const float4* y4 = reinterpret_cast<const float4*>(y);
      for (int64_t c = lane; c < dim / 4; c += kWarpSize) {
        const float4 a = x4[c];
        const float4 b = __ldg(y4 + c);
        if (l2) {
          const float d0 = a.x - b.x, d1 = a.y - b.y, d2 = a.z - b.z, d3 = a.w - b.w;
          sum = fmaf(d0, d0, fmaf(d1, d1, fmaf(d2, d2, fmaf(d3, d3, sum))));
        } else {
          sum = fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, sum))));
        }
      }
    } else {
      for (int64_t c = lane; c < dim; c += kWarpSize) {
        const float a = x[c], b = __ldg(y + c);
        sum = l2 ? fmaf(a - b, a - b, sum) : fmaf(a, b, sum);
      }
    }
#pragma unroll
    for (int d = kWarpSize / 2; d > 0; d /= 2) sum += __shfl_xor_sync(kFullWarp, sum, d);
    if (lane == 0) keys[i] = l2 ? sum : -sum;
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

int64_t knn_candidate_count(int64_t k) {
  require(k >= 1 && k <= kMaxSelectK, "k = ", k, " is outside 1 .. ", kMaxSelectK);
  // A power of two from the smallest queue: selecting the whole queue costs about what selecting k
  // of it does, and the margin is what the measured recall needs (bench/gpu/NOTES.md).
  constexpr int64_t kMinCandidates = 32;
  constexpr int64_t kMinMargin = 16;
  const int64_t wanted = std::max(2 * k, k + kMinMargin);
  int64_t kc = kMinCandidates;
  while (kc < wanted && kc < kMaxSelectK) kc *= 2;
  return kc;
}

void launch_to_half(const float* x, int64_t n, int64_t dim, ComputeMode mode, void* out, int* overflow,
                    cudaStream_t stream) {
  if (n == 0) return;
  const int64_t ld = half_row_stride(dim);
  const unsigned blocks = blocks_for_warps(n);
  if (mode == ComputeMode::fp16) {
    to_half_kernel<<<blocks, kThreads, 0, stream>>>(x, n, dim, ld, static_cast<__half2*>(out), overflow);
  } else {
    to_half_kernel<<<blocks, kThreads, 0, stream>>>(x, n, dim, ld, static_cast<__nv_bfloat162*>(out), overflow);
  }
  QV_LAUNCH_CHECK("to_half_kernel");
}

void distance_gemm(cublasHandle_t handle, ComputeMode mode, int64_t cols, int64_t rows, int64_t depth, float alpha,
                   const void* y, int64_t ldy, const void* x, int64_t ldx, float* tile, int64_t ld) {
  const float beta = 0.f;
  const int m = static_cast<int>(cols), n = static_cast<int>(rows), kk = static_cast<int>(depth);
  if (mode == ComputeMode::fp32) {
    QV_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, kk, &alpha, static_cast<const float*>(y),
                                static_cast<int>(ldy), static_cast<const float*>(x), static_cast<int>(ldx), &beta,
                                tile, static_cast<int>(ld)));
    return;
  }
  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (mode == ComputeMode::tf32) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (mode == ComputeMode::fp16) type = CUDA_R_16F;
  if (mode == ComputeMode::bf16) type = CUDA_R_16BF;
  QV_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, kk, &alpha, y, type, static_cast<int>(ldy), x,
                               type, static_cast<int>(ldx), &beta, tile, CUDA_R_32F, static_cast<int>(ld), compute,
                               CUBLAS_GEMM_DEFAULT));
}

void launch_rerank(const float* base, const float* queries, int64_t dim, const int32_t* rows, int64_t nq,
                   int64_t kc, bool l2, float* keys, cudaStream_t stream) {
  const int64_t count = nq * kc;
  if (count == 0) return;
  const bool vec4 = dim % 4 == 0 && aligned16(base) && aligned16(queries);
  rerank_kernel<<<blocks_for_warps(count), kThreads, 0, stream>>>(base, queries, dim, rows, count, kc, l2, vec4,
                                                                  keys);
  QV_LAUNCH_CHECK("rerank_kernel");
}

}  // namespace quiver::gpu
