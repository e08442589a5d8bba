#include "cuda/flat/compute_modes.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "cpp/core/error.h"
#include "cuda/core/error.h"
#include "cuda/flat/tf32_select.h"
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

__device__ inline float abs_max(__half2 h) { return fmaxf(fabsf(__low2float(h)), fabsf(__high2float(h))); }
__device__ inline float abs_max(__nv_bfloat162 h) { return fmaxf(fabsf(__low2float(h)), fabsf(__high2float(h))); }

// One warp per row; each lane writes pairs of values (ld is even), zeros past dim.
template <typename H2>
__global__ void to_half_kernel(const float* x, int64_t n, int64_t dim, int64_t ld, H2* out, int* overflow,
                               unsigned* max_abs_bits) {
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  float most = 0.f;
  for (int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize; row < n; row += warps) {
    const float* r = x + row * dim;
    H2* o = out + row * (ld / 2);
    for (int64_t p = lane; p < ld / 2; p += kWarpSize) {
      const int64_t c = 2 * p;
      store_pair(o + p, c < dim ? r[c] : 0.f, c + 1 < dim ? r[c + 1] : 0.f, overflow);
      if (max_abs_bits != nullptr) most = fmaxf(most, abs_max(o[p]));
    }
  }
  if (max_abs_bits != nullptr) {
    // Non-negative floats order as their bits; a NaN's bits exceed infinity's (a huge bound).
    const unsigned bits = __reduce_max_sync(kFullWarp, __float_as_uint(most));
    if (lane == 0 && bits != 0) atomicMax(max_abs_bits, bits);
  }
}

}  // namespace

namespace {

// The margin the measured recall needs (bench/gpu/NOTES.md).
int64_t wanted_candidates(int64_t k) {
  require(k >= 1 && k <= kMaxSelectK, "k = ", k, " is outside 1 .. ", kMaxSelectK);
  constexpr int64_t kMinMargin = 16;
  return std::max(2 * k, k + kMinMargin);
}

}  // namespace

int64_t knn_candidate_count(int64_t k) {
  // A power of two from the smallest queue: selecting the whole queue costs about what selecting k
  // of it does.
  constexpr int64_t kMinCandidates = 32;
  const int64_t wanted = wanted_candidates(k);
  int64_t kc = kMinCandidates;
  while (kc < wanted && kc < kMaxSelectK) kc *= 2;
  return kc;
}

int64_t tf32_candidate_count(int64_t k) {
  const int64_t wanted = wanted_candidates(k);
  return wanted <= kTf32SelectMaxK ? wanted : knn_candidate_count(k);
}

void launch_to_half(const float* x, int64_t n, int64_t dim, ComputeMode mode, void* out, int* overflow,
                    cudaStream_t stream) {
  launch_to_half(x, n, dim, mode, out, overflow, nullptr, stream);
}

void launch_to_half(const float* x, int64_t n, int64_t dim, ComputeMode mode, void* out, int* overflow,
                    unsigned* max_abs_bits, cudaStream_t stream) {
  if (n == 0) return;
  const int64_t ld = half_row_stride(dim);
  const unsigned blocks = blocks_for_warps(n);
  if (mode == ComputeMode::fp16) {
    to_half_kernel<<<blocks, kThreads, 0, stream>>>(x, n, dim, ld, static_cast<__half2*>(out), overflow,
                                                    max_abs_bits);
  } else {
    to_half_kernel<<<blocks, kThreads, 0, stream>>>(x, n, dim, ld, static_cast<__nv_bfloat162*>(out), overflow,
                                                    max_abs_bits);
  }
  QV_LAUNCH_CHECK("to_half_kernel");
}

float fp16_tile_scale(float alpha, int64_t dim, float max_x, float max_y) {
  const double bound = std::fabs(double(alpha)) * double(dim) * double(max_x) * double(max_y);
  if (!(bound > 0) || !std::isfinite(bound)) return 1.f;
  const int e = static_cast<int>(std::floor(std::log2(32768.0 / bound)));
  return std::ldexp(1.f, std::clamp(e, -100, 60));
}

void distance_gemm16(cublasHandle_t handle, ComputeMode mode, int64_t cols, int64_t rows, int64_t depth, float alpha,
                     const void* y, int64_t ldy, const void* x, int64_t ldx, void* tile, int64_t ld) {
  require(mode == ComputeMode::fp16 || mode == ComputeMode::bf16, "distance_gemm16: mode is not fp16 or bf16");
  const float beta = 0.f;
  const cudaDataType_t type = mode == ComputeMode::fp16 ? CUDA_R_16F : CUDA_R_16BF;
  QV_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(cols), static_cast<int>(rows),
                               static_cast<int>(depth), &alpha, y, type, static_cast<int>(ldy), x, type,
                               static_cast<int>(ldx), &beta, tile, type, static_cast<int>(ld), CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT));
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

}  // namespace quiver::gpu
