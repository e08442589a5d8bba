#include "cuda/flat/centring.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cuda/core/error.h"
#include "cuda/select/warp_lanes.cuh"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / kWarpSize;
// The sample's rows are split among this many blocks per 32 columns (each block's warps split
// theirs again): enough loads in flight to make the sample cost microseconds, and partial sums
// added in one fixed order on the host (the same centre every call).
constexpr int kSampleGroups = 16;
// Centre only when the mean's squared norm is at least this share of the rows' mean squared norm:
// the bound then shrinks by at least sqrt(1 - share) (13%), worth a centred copy of the base.
constexpr double kMinCentreShare = 0.25;

// partial[group][2 c] / [2 c + 1]: sums of column c's values / squares over the group's rows.
__global__ void sample_sums_kernel(const float* base, int64_t n, int64_t dim, int64_t samples, double* partial) {
  __shared__ double block_sums[kWarpsPerBlock][2][kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int64_t column = int64_t(blockIdx.x) * kWarpSize + lane;
  const int64_t workers = int64_t(gridDim.y) * kWarpsPerBlock;
  double sum = 0, squares = 0;
  if (column < dim) {
    for (int64_t i = int64_t(blockIdx.y) * kWarpsPerBlock + warp; i < samples; i += workers) {
      const double v = base[(i * n / samples) * dim + column];
      sum += v;
      squares = fma(v, v, squares);
    }
  }
  block_sums[warp][0][lane] = sum;
  block_sums[warp][1][lane] = squares;
  __syncthreads();
  if (warp == 0 && column < dim) {
    for (int w = 1; w < kWarpsPerBlock; ++w) {
      sum += block_sums[w][0][lane];
      squares += block_sums[w][1][lane];
    }
    partial[(int64_t(blockIdx.y) * dim + column) * 2] = sum;
    partial[(int64_t(blockIdx.y) * dim + column) * 2 + 1] = squares;
  }
}

// A warp per row, its lanes along the columns (16-byte accesses where the rows allow).
__global__ void centre_kernel(const float* x, int64_t n, int64_t dim, bool vec4, const float* centre, float* out) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize; row < n; row += warps) {
    if (vec4) {
      const float4* in = reinterpret_cast<const float4*>(x + row * dim);
      const float4* c4 = reinterpret_cast<const float4*>(centre);
      float4* o = reinterpret_cast<float4*>(out + row * dim);
      for (int64_t i = lane; i < dim / 4; i += kWarpSize) {
        const float4 v = in[i], c = c4[i];
        o[i] = make_float4(v.x - c.x, v.y - c.y, v.z - c.z, v.w - c.w);
      }
    } else {
      for (int64_t i = lane; i < dim; i += kWarpSize) out[row * dim + i] = x[row * dim + i] - centre[i];
    }
  }
}

}  // namespace

std::vector<double> sample_sums_host(const float* base, int64_t n, int64_t dim, int64_t samples) {
  std::vector<double> sums(static_cast<size_t>(2 * dim), 0.0);
  for (int64_t i = 0; i < samples; ++i) {
    const float* row = base + (i * n / samples) * dim;
    for (int64_t c = 0; c < dim; ++c) {
      sums[size_t(2 * c)] += row[c];
      sums[size_t(2 * c + 1)] += double(row[c]) * row[c];
    }
  }
  return sums;
}

int64_t sample_sums_workspace(int64_t dim) { return kSampleGroups * 2 * dim; }

std::vector<double> sample_sums_device(const float* base, int64_t n, int64_t dim, int64_t samples,
                                       double* workspace, cudaStream_t stream) {
  std::vector<double> partial(static_cast<size_t>(sample_sums_workspace(dim)));
  const dim3 grid(static_cast<unsigned>((dim + kWarpSize - 1) / kWarpSize), kSampleGroups);
  sample_sums_kernel<<<grid, kThreads, 0, stream>>>(base, n, dim, samples, workspace);
  QV_LAUNCH_CHECK("sample_sums_kernel");
  QV_CUDA_CHECK(cudaMemcpyAsync(partial.data(), workspace, partial.size() * sizeof(double), cudaMemcpyDeviceToHost,
                                stream));
  QV_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> sums(static_cast<size_t>(2 * dim), 0.0);
  for (int64_t g = 0; g < kSampleGroups; ++g)
    for (int64_t i = 0; i < 2 * dim; ++i) sums[size_t(i)] += partial[size_t(g * 2 * dim + i)];
  return sums;
}

std::vector<float> choose_centre(const std::vector<double>& sums, int64_t dim, int64_t samples) {
  if (samples <= 0) return {};
  double mean_norm2 = 0, squares = 0;
  std::vector<float> centre(static_cast<size_t>(dim));
  for (int64_t c = 0; c < dim; ++c) {
    const double mean = sums[size_t(2 * c)] / double(samples);
    centre[size_t(c)] = static_cast<float>(mean);
    mean_norm2 += mean * mean;
    squares += sums[size_t(2 * c + 1)] / double(samples);
  }
  // (Not finite: values too large for the sums; the bound fails either way.)
  if (!(mean_norm2 >= kMinCentreShare * squares) || !(squares < 1e300)) return {};
  for (float v : centre)
    if (!std::isfinite(v)) return {};
  return centre;
}

void launch_centre(const float* x, int64_t n, int64_t dim, const float* centre, float* out, cudaStream_t stream) {
  if (n == 0) return;
  const bool vec4 = dim % 4 == 0 && (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(centre) |
                                     reinterpret_cast<uintptr_t>(out)) % 16 == 0;
  const auto blocks = static_cast<unsigned>(std::clamp<int64_t>((n + kWarpsPerBlock - 1) / kWarpsPerBlock, 1, 65535));
  centre_kernel<<<blocks, kThreads, 0, stream>>>(x, n, dim, vec4, centre, out);
  QV_LAUNCH_CHECK("centre_kernel");
}

}  // namespace quiver::gpu
