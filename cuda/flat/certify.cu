#include "cuda/flat/certify.h"
#include "cuda/flat/certify.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cuda/core/error.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / kWarpSize;
// The statistics kernels reduce in each block, then one atomic per block: a fixed grid keeps the
// atomics few.
constexpr unsigned kStatsBlocks = 1024;
constexpr int kLanesPerRow = kStatsLanesPerRow;
constexpr int kRowsPerWarp = kWarpSize / kLanesPerRow;

// The block's maxima of a and b (every thread passes its own), then one atomicMax each.
__device__ void block_max(unsigned a, unsigned b, unsigned* stats, bool second) {
  __shared__ unsigned shared[2][kWarpsPerBlock];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
#pragma unroll
  for (int d = kWarpSize / 2; d > 0; d /= 2) {
    a = max(a, __shfl_xor_sync(kFullWarp, a, d));
    b = max(b, __shfl_xor_sync(kFullWarp, b, d));
  }
  if (lane == 0) {
    shared[0][warp] = a;
    shared[1][warp] = b;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kWarpsPerBlock; ++w) {
      a = max(a, shared[0][w]);
      b = max(b, shared[1][w]);
    }
    atomicMax(stats, a);
    if (second) atomicMax(stats + 1, b);
  }
}

template <InputRounding R>
__global__ void base_stats_kernel(const float* y, int64_t n, int64_t dim, bool vec4, unsigned* stats) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  unsigned max_ss = 0, max_rr = 0;
  // The bound is the same for every lane of a warp (its shuffles need them all).
  for (int64_t r0 = (int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize) * kRowsPerWarp; r0 < n;
       r0 += warps * kRowsPerWarp) {
    double ss, rr;
    row_sums<R>(y, n, dim, vec4, r0 + lane / kLanesPerRow, lane % kLanesPerRow, &ss, &rr);
    max_ss = max(max_ss, upper_bits(ss));
    max_rr = max(max_rr, upper_bits(rr));
  }
  block_max(max_ss, max_rr, stats, true);
}

__global__ void norms_max_kernel(const float* norms, int64_t n, float scale, unsigned* stats) {
  unsigned m = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    m = max(m, upper_bits(double(fmaxf(norms[i], 0.f)) * scale));
  block_max(m, 0, stats, false);
}

template <InputRounding R>
__global__ void query_stats_kernel(const float* x, int64_t nq, int64_t dim, bool vec4, double* stats) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t q0 = (int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize) * kRowsPerWarp; q0 < nq;
       q0 += warps * kRowsPerWarp) {
    const int64_t q = q0 + lane / kLanesPerRow;
    double ss, rr;
    row_sums<R>(x, nq, dim, vec4, q, lane % kLanesPerRow, &ss, &rr);
    if (q < nq && lane % kLanesPerRow == 0) {
      stats[2 * q] = ss;
      stats[2 * q + 1] = rr;
    }
  }
}

__global__ void certify_kernel(const CertifyModel m, const float* approx_keys, const int32_t* approx_rows, int64_t kc,
                               const float* exact_keys, const int32_t* exact_rows, int64_t k, int64_t nq,
                               const double* query_stats, const unsigned* base_stats, const float* bounds,
                               uint8_t* flags) {
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < nq; q += int64_t(gridDim.x) * blockDim.x) {
    const float bound = bounds != nullptr ? bounds[q] : __int_as_float(0x7f800000);
    flags[q] = certify_query(m, approx_keys[q * kc + kc - 1], approx_rows[q * kc + kc - 1], exact_keys[q * k + k - 1],
                             exact_rows[q * k + k - 1], query_stats + 2 * q, base_stats, bound)
                   ? 1
                   : 0;
  }
}

__global__ void split_bounds_kernel(const float* keys, int64_t nq, int64_t splits, int64_t split_kc, float* bounds,
                                    bool lower) {
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < nq; q += int64_t(gridDim.x) * blockDim.x) {
    float bound = lower ? bounds[q] : __int_as_float(0x7f800000);
    const float* last = keys + q * splits * split_kc + split_kc - 1;
    for (int64_t s = 0; s < splits; ++s) bound = fminf(bound, last[s * split_kc]);
    bounds[q] = bound;
  }
}

unsigned grid_for(int64_t threads) {
  return static_cast<unsigned>(std::clamp<int64_t>((threads + kThreads - 1) / kThreads, 1, 65535));
}

bool env_set(const char* name, bool zero_means_off) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  return !(zero_means_off && std::strcmp(v, "0") == 0);
}

}  // namespace

CertifyModel certify_model(bool tf32, bool l2, int64_t dim, bool centred) {
  // cuBLAS rounds SGEMM's inputs to TF32 under NVIDIA_TF32_OVERRIDE=1 and emulates it under
  // CUBLAS_EMULATE_SINGLE_PRECISION: then no tighter bound than TF32's is assumed.
  const bool sgemm_rounded = env_set("NVIDIA_TF32_OVERRIDE", false) && std::strcmp(std::getenv("NVIDIA_TF32_OVERRIDE"), "1") == 0;
  const bool sgemm_emulated = env_set("CUBLAS_EMULATE_SINGLE_PRECISION", true);
  CertifyModel m;
  m.l2 = l2;
  m.rounded_inputs = tf32 || sgemm_rounded || sgemm_emulated;
  const double d = static_cast<double>(dim);
  // Tensor cores add aligned, truncated products in blocks; at most ~2 dim truncations of 2^-23 of
  // the running sum of |products| (published measurements of Hopper's TF32), taken 4x over.
  // SGEMM: any order of float FMAs, gamma_dim = dim 2^-24, taken 4x over.
  m.accumulation = m.rounded_inputs ? (d + 16) * 0x1p-20 : 4 * (d + 2) * kFloatUnit;
  m.norms = 2 * (d + 2) * kFloatUnit;   // the base norms: float sums of squares (gamma_dim, 2x)
  m.rerank = 2 * (d + 2) * kFloatUnit;  // exact_distances.h's gamma_(dim+2), 2x
  m.absolute = (4 * d + 16) * 0x1p-126;
  m.centring = centred && l2 ? kFloatUnit : 0;  // x - m rounded once (to nearest; subnormal results are exact)
  return m;
}

static bool rows_vec4(const float* x, int64_t dim) { return dim % 4 == 0 && (reinterpret_cast<uintptr_t>(x) & 15) == 0; }

void launch_base_stats(const float* y, int64_t n, int64_t dim, unsigned* stats, cudaStream_t stream,
                       InputRounding rounding) {
  if (n == 0) return;
  const int64_t rows_per_block = int64_t(kWarpsPerBlock) * kRowsPerWarp;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((n + rows_per_block - 1) / rows_per_block, kStatsBlocks));
  if (rounding == InputRounding::fp16) {
    base_stats_kernel<InputRounding::fp16><<<blocks, kThreads, 0, stream>>>(y, n, dim, rows_vec4(y, dim), stats);
  } else {
    base_stats_kernel<InputRounding::tf32><<<blocks, kThreads, 0, stream>>>(y, n, dim, rows_vec4(y, dim), stats);
  }
  QV_LAUNCH_CHECK("base_stats_kernel");
}

void launch_norms_max(const float* norms, int64_t n, float scale, unsigned* stats, cudaStream_t stream) {
  if (n == 0) return;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, kStatsBlocks));
  norms_max_kernel<<<blocks, kThreads, 0, stream>>>(norms, n, scale, stats);
  QV_LAUNCH_CHECK("norms_max_kernel");
}

void launch_query_stats(const float* x, int64_t nq, int64_t dim, double* stats, cudaStream_t stream,
                        InputRounding rounding) {
  if (nq == 0) return;
  const unsigned grid = grid_for((nq + kRowsPerWarp - 1) / kRowsPerWarp * kWarpSize);
  if (rounding == InputRounding::fp16) {
    query_stats_kernel<InputRounding::fp16><<<grid, kThreads, 0, stream>>>(x, nq, dim, rows_vec4(x, dim), stats);
  } else {
    query_stats_kernel<InputRounding::tf32><<<grid, kThreads, 0, stream>>>(x, nq, dim, rows_vec4(x, dim), stats);
  }
  QV_LAUNCH_CHECK("query_stats_kernel");
}

void launch_certify(const CertifyModel& model, const float* approx_keys, const int32_t* approx_rows, int64_t kc,
                    const float* exact_keys, const int32_t* exact_rows, int64_t k, int64_t nq,
                    const double* query_stats, const unsigned* base_stats, uint8_t* flags, cudaStream_t stream,
                    const float* bounds) {
  if (nq == 0) return;
  certify_kernel<<<grid_for(nq), kThreads, 0, stream>>>(model, approx_keys, approx_rows, kc, exact_keys, exact_rows, k,
                                                        nq, query_stats, base_stats, bounds, flags);
  QV_LAUNCH_CHECK("certify_kernel");
}

void launch_split_bounds(const float* keys, int64_t nq, int64_t splits, int64_t split_kc, float* bounds,
                         cudaStream_t stream, bool lower) {
  if (nq == 0) return;
  split_bounds_kernel<<<grid_for(nq), kThreads, 0, stream>>>(keys, nq, splits, split_kc, bounds, lower);
  QV_LAUNCH_CHECK("split_bounds_kernel");
}

}  // namespace quiver::gpu
