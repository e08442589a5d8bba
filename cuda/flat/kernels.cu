#include "cuda/flat/kernels.h"

#include <algorithm>

#include "cuda/core/error.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / kWarpSize;
// Grid-stride loops: enough blocks to fill any current GPU, few enough to launch cheaply.
constexpr int64_t kMaxBlocks = 65535;

unsigned blocks_for(int64_t threads_needed) {
  return static_cast<unsigned>(std::clamp<int64_t>((threads_needed + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

__global__ void row_norms_kernel(const float* x, int64_t n, int64_t dim, float* out) {
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize; row < n; row += warps) {
    const float* r = x + row * dim;
    float sum = 0.f;
    for (int64_t i = lane; i < dim; i += kWarpSize) sum = fmaf(r[i], r[i], sum);
#pragma unroll
    for (int d = kWarpSize / 2; d > 0; d /= 2) sum += __shfl_xor_sync(kFullWarp, sum, d);
    if (lane == 0) out[row] = sum;
  }
}

__global__ void finalize_kernel(const float* keys, const int32_t* rows_in, int64_t count, int64_t k,
                                const float* query_norms, bool l2, float* distances, int64_t* ids) {
  const float missing = l2 ? kSentinelKey : -kSentinelKey;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int32_t row = rows_in[i];
    if (row == SentinelValue<int32_t>::value) {
      distances[i] = missing;
      ids[i] = -1;
    } else {
      const float key = keys[i];
      distances[i] = l2 ? fmaxf(query_norms != nullptr ? key + query_norms[i / k] : key, 0.f) : -key;
      ids[i] = row;
    }
  }
}

__global__ void fill_missing_kernel(float* distances, int64_t* ids, int64_t count, float value) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    distances[i] = value;
    ids[i] = -1;
  }
}

__global__ void gather_rows_kernel(const float* x, int64_t dim, const int64_t* rows, int64_t n, float* out) {
  const int64_t total = n * dim;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / dim;
    out[i] = x[rows[r] * dim + (i - r * dim)];
  }
}

__global__ void scatter_results_kernel(const float* src_d, const int64_t* src_i, const int64_t* pairs, int64_t count,
                                       int64_t k, float* distances, int64_t* ids) {
  const int64_t total = count * k;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = i / k, j = i - p * k;
    const int64_t src = pairs[2 * p] * k + j, dst = pairs[2 * p + 1] * k + j;
    distances[dst] = src_d[src];
    ids[dst] = src_i[src];
  }
}

}  // namespace

void launch_row_norms(const float* x, int64_t n, int64_t dim, float* out, cudaStream_t stream) {
  if (n == 0) return;
  row_norms_kernel<<<blocks_for(n * kWarpSize), kThreads, 0, stream>>>(x, n, dim, out);
  QV_LAUNCH_CHECK("row_norms_kernel");
}

void launch_finalize(const float* keys, const int32_t* rows_in, int64_t rows, int64_t k,
                     const float* query_norms, bool l2, float* distances, int64_t* ids,
                     cudaStream_t stream) {
  const int64_t count = rows * k;
  if (count == 0) return;
  finalize_kernel<<<blocks_for(count), kThreads, 0, stream>>>(keys, rows_in, count, k, query_norms, l2,
                                                              distances, ids);
  QV_LAUNCH_CHECK("finalize_kernel");
}

void launch_fill_missing(float* distances, int64_t* ids, int64_t count, float value, cudaStream_t stream) {
  if (count == 0) return;
  fill_missing_kernel<<<blocks_for(count), kThreads, 0, stream>>>(distances, ids, count, value);
  QV_LAUNCH_CHECK("fill_missing_kernel");
}

void fill_missing_results(float* distances, int64_t* ids, int64_t count, float value, bool outputs_on_device,
                          cudaStream_t stream) {
  if (outputs_on_device) {
    launch_fill_missing(distances, ids, count, value, stream);
  } else {
    std::fill(distances, distances + count, value);
    std::fill(ids, ids + count, int64_t{-1});
  }
}

void launch_gather_rows(const float* x, int64_t dim, const int64_t* rows, int64_t n, float* out,
                        cudaStream_t stream) {
  if (n == 0) return;
  gather_rows_kernel<<<blocks_for(n * dim), kThreads, 0, stream>>>(x, dim, rows, n, out);
  QV_LAUNCH_CHECK("gather_rows_kernel");
}

void launch_scatter_results(const float* src_distances, const int64_t* src_ids, const int64_t* pairs, int64_t count,
                            int64_t k, float* distances, int64_t* ids, cudaStream_t stream) {
  if (count == 0) return;
  scatter_results_kernel<<<blocks_for(count * k), kThreads, 0, stream>>>(src_distances, src_ids, pairs, count, k,
                                                                        distances, ids);
  QV_LAUNCH_CHECK("scatter_results_kernel");
}

}  // namespace quiver::gpu
