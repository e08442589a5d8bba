#include "cuda/ivf_pq/pq_tables.h"

#include <algorithm>

#include "cuda/core/error.h"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int kCentroids = 256;
constexpr int64_t kMaxBlocks = 65535;

// One thread per entry, in double: the term is a sum of m parts of different signs.
__global__ void entry_terms_kernel(const uint8_t* codes, int64_t code_stride, const int32_t* slots,
                                   int64_t first_slot, const int32_t* lists, int32_t list0, int64_t n,
                                   const float* centroids, const float* codebooks, int64_t m, int64_t dsub,
                                   float* terms) {
  const int64_t dim = m * dsub;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t slot = slots != nullptr ? slots[i] : first_slot + i;
    const int64_t list = lists != nullptr ? lists[i] : list0;
    const uint8_t* code = codes + slot * code_stride;
    const float* c = centroids + list * dim;
    double sum = 0;
    for (int64_t s = 0; s < m; ++s) {
      const float* q2 = codebooks + (s * kCentroids + code[s]) * dsub;
      for (int64_t t = 0; t < dsub; ++t) sum += double(q2[t]) * (double(q2[t]) + 2.0 * double(c[s * dsub + t]));
    }
    terms[slot] = float(sum);
  }
}

// One block per sub-quantizer s (thread c: codeword c), in double: the centre, then the radius.
__global__ void codebook_bounds_kernel(const float* codebooks, int64_t dsub, float* centres, float* radii) {
  const int64_t s = blockIdx.x;
  const float* cb = codebooks + s * kCentroids * dsub;
  for (int64_t j = threadIdx.x; j < dsub; j += blockDim.x) {
    double sum = 0;
    for (int c = 0; c < kCentroids; ++c) sum += cb[c * dsub + j];
    centres[s * dsub + j] = float(sum / kCentroids);
  }
  __syncthreads();
  __shared__ unsigned int widest;  // bits of a non-negative float: they order as the floats do
  if (threadIdx.x == 0) widest = 0;
  __syncthreads();
  for (int c = threadIdx.x; c < kCentroids; c += blockDim.x) {
    double d2 = 0;
    for (int64_t j = 0; j < dsub; ++j) {
      const double d = double(cb[c * dsub + j]) - double(centres[s * dsub + j]);
      d2 += d * d;
    }
    // Rounded up: the bound must hold for every codeword.
    atomicMax(&widest, __float_as_uint(__double2float_ru(sqrt(d2))));
  }
  __syncthreads();
  if (threadIdx.x == 0) radii[s] = __uint_as_float(widest);
}

}  // namespace

void launch_pq_entry_terms(const uint8_t* codes, int64_t code_stride, const int32_t* slots, int64_t first_slot,
                           const int32_t* lists, int32_t list, int64_t n, const float* centroids,
                           const float* codebooks, int64_t m, int64_t dsub, float* terms, cudaStream_t stream) {
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
  entry_terms_kernel<<<blocks, kThreads, 0, stream>>>(codes, code_stride, slots, first_slot, lists, list, n, centroids,
                                                      codebooks, m, dsub, terms);
  QV_LAUNCH_CHECK("entry_terms_kernel");
}

void launch_pq_codebook_bounds(const float* codebooks, int64_t m, int64_t dsub, float* bounds, cudaStream_t stream) {
  if (m == 0) return;
  codebook_bounds_kernel<<<static_cast<unsigned>(m), kThreads, 0, stream>>>(codebooks, dsub, bounds,
                                                                            bounds + m * dsub);
  QV_LAUNCH_CHECK("codebook_bounds_kernel");
}

}  // namespace quiver::gpu
