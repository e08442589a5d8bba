#include "cuda/flat/centring.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <cstring>

#include "cuda/core/error.h"
#include "cuda/flat/certify.cuh"
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
// Sums a column: of its values, their squares, their squared TF32 residuals (certify.cuh's
// tf32_error).
constexpr int kSums = 3;

// partial[group][kSums c ..]: column c's sums over the group's rows.
__global__ void sample_sums_kernel(const float* base, int64_t n, int64_t dim, int64_t samples, double* partial) {
  __shared__ double block_sums[kWarpsPerBlock][kSums][kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int64_t column = int64_t(blockIdx.x) * kWarpSize + lane;
  const int64_t workers = int64_t(gridDim.y) * kWarpsPerBlock;
  double sums[kSums] = {0, 0, 0};
  if (column < dim) {
    for (int64_t i = int64_t(blockIdx.y) * kWarpsPerBlock + warp; i < samples; i += workers) {
      const float v = base[(i * n / samples) * dim + column];
      const double residual = tf32_error(v);
      sums[0] += v;
      sums[1] = fma(double(v), double(v), sums[1]);
      sums[2] = fma(residual, residual, sums[2]);
    }
  }
  for (int s = 0; s < kSums; ++s) block_sums[warp][s][lane] = sums[s];
  __syncthreads();
  if (warp == 0 && column < dim) {
    for (int w = 1; w < kWarpsPerBlock; ++w)
      for (int s = 0; s < kSums; ++s) sums[s] += block_sums[w][s][lane];
    for (int s = 0; s < kSums; ++s) partial[(int64_t(blockIdx.y) * dim + column) * kSums + s] = sums[s];
  }
}

// certify.cuh's tf32_error on the host: one TF32 ulp of v's binade, 0 where v is exact in TF32.
double tf32_error_host(float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  bits &= 0x7fffffffu;
  const uint32_t exponent = bits >> 23;
  if (exponent == 0xffu) return HUGE_VAL;
  if (exponent == 0) return std::fabs(double(v));
  if ((bits & 0x1fffu) == 0) return 0;
  return std::ldexp(1.0, int(exponent > 10 ? exponent - 10 : 1) - 127);
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
  std::vector<double> sums(static_cast<size_t>(kSums * dim), 0.0);
  for (int64_t i = 0; i < samples; ++i) {
    const float* row = base + (i * n / samples) * dim;
    for (int64_t c = 0; c < dim; ++c) {
      const double residual = tf32_error_host(row[c]);
      sums[size_t(kSums * c)] += row[c];
      sums[size_t(kSums * c + 1)] += double(row[c]) * row[c];
      sums[size_t(kSums * c + 2)] += residual * residual;
    }
  }
  return sums;
}

int64_t sample_sums_workspace(int64_t dim) { return kSampleGroups * kSums * dim; }

std::vector<double> sample_sums_device(const float* base, int64_t n, int64_t dim, int64_t samples,
                                       double* workspace, cudaStream_t stream) {
  std::vector<double> partial(static_cast<size_t>(sample_sums_workspace(dim)));
  const dim3 grid(static_cast<unsigned>((dim + kWarpSize - 1) / kWarpSize), kSampleGroups);
  sample_sums_kernel<<<grid, kThreads, 0, stream>>>(base, n, dim, samples, workspace);
  QV_LAUNCH_CHECK("sample_sums_kernel");
  QV_CUDA_CHECK(cudaMemcpyAsync(partial.data(), workspace, partial.size() * sizeof(double), cudaMemcpyDeviceToHost,
                                stream));
  QV_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> sums(static_cast<size_t>(kSums * dim), 0.0);
  for (int64_t g = 0; g < kSampleGroups; ++g)
    for (int64_t i = 0; i < kSums * dim; ++i) sums[size_t(i)] += partial[size_t(g * kSums * dim + i)];
  return sums;
}

std::vector<float> choose_centre(const std::vector<double>& sums, int64_t dim, int64_t samples) {
  if (samples <= 0) return {};
  double mean_norm2 = 0, squares = 0, residuals = 0;
  std::vector<float> centre(static_cast<size_t>(dim));
  for (int64_t c = 0; c < dim; ++c) {
    const double mean = sums[size_t(kSums * c)] / double(samples);
    centre[size_t(c)] = static_cast<float>(mean);
    mean_norm2 += mean * mean;
    squares += sums[size_t(kSums * c + 1)] / double(samples);
    residuals += sums[size_t(kSums * c + 2)];
  }
  // Rows exact in TF32 (small integers: pixels, counts) multiply without rounding, and the bound is
  // the accumulation's alone, acc |x| |y|. Centred rows are rounded: (2 u + acc) |x - m| |y - m|,
  // u = 2^-10 a TF32 ulp. So centre those only where that is smaller, when the rest's share of the
  // squared norms is below acc / (2 u + acc) (for 784 values, 0.28).
  const double accumulation = certify_model(true, true, dim).accumulation;
  const double min_share = residuals == 0 ? 1 - accumulation / (0x1p-9 + accumulation) : kMinCentreShare;
  // (Not finite: values too large for the sums; the bound fails either way.)
  if (!(mean_norm2 >= min_share * squares) || !(squares < 1e300)) return {};
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
