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

void pq_term3(cublasHandle_t handle, const float* codebooks, int64_t m, int64_t dsub, const float* x, int64_t rows,
              float alpha, float* term3) {
  if (rows == 0) return;
  const float zero = 0.f;
  // Column-major view: C_m (256 x rows, ld m * 256) = CB_m^T-view (256 x dsub) * X_m (dsub x rows, ld dim).
  QV_CUBLAS_CHECK(cublasSgemmStridedBatched(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, kCentroids, static_cast<int>(rows), static_cast<int>(dsub), &alpha, codebooks,
      static_cast<int>(dsub), int64_t(kCentroids) * dsub, x, static_cast<int>(m * dsub), dsub, &zero, term3,
      static_cast<int>(m * kCentroids), kCentroids, static_cast<int>(m)));
}

}  // namespace quiver::gpu
