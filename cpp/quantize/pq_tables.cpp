#include "cpp/quantize/pq_tables.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpp/blas/gemm.h"
#include "cpp/core/thread_pool.h"
#include "cpp/quantize/pq_table_kernels.h"

namespace quiver {

namespace {

// Lists (or queries) per task of the batched tables: one GEMM tile row block per sub-space.
constexpr int64_t kTableBlock = 64;
// Below this sub-vector length a GEMM (inner dimension dsub) runs slower than the table kernels.
constexpr int64_t kGemmMinDsub = 8;

// ||q_sj||^2 for every codeword: m x 256.
std::vector<float> codeword_norms(const ProductQuantizer& pq) {
  const int64_t dsub = pq.dsub();
  std::vector<float> norms(static_cast<size_t>(pq.m * kPqCentroids));
  for (int64_t i = 0; i < pq.m * kPqCentroids; ++i) {
    const float* c = &pq.codebooks[i * dsub];
    float sum = 0;
    for (int64_t d = 0; d < dsub; ++d) sum += c[d] * c[d];
    norms[i] = sum;
  }
  return norms;
}

// tables (rows x m x 256) = alpha * <row_s, q_sj> (+ norms[s * 256 + j] when norms), by GEMM per
// sub-space over blocks of rows (by the table kernels for short sub-vectors), in parallel.
void batched_tables(const ProductQuantizer& pq, ThreadPool& pool, int64_t rows, const float* x, float alpha,
                    const float* norms, float* tables) {
  const int64_t dim = pq.dim, m = pq.m, dsub = pq.dsub(), width = m * kPqCentroids;
  const int64_t blocks = (rows + kTableBlock - 1) / kTableBlock;
  if (dsub < kGemmMinDsub) {
    const PqTableKernels kernels = best_pq_table_kernels();
    pool.parallel_for(blocks, [&](int64_t b) {
      for (int64_t i = b * kTableBlock; i < std::min(rows, (b + 1) * kTableBlock); ++i)
        for (int64_t s = 0; s < m; ++s) {
          float* out = tables + i * width + s * kPqCentroids;
          kernels.inner_products(&pq.codebooks[s * kPqCentroids * dsub], dsub, x + i * dim + s * dsub, out);
          if (norms || alpha != 1.0f)
            pq_combine_tables(kPqCentroids, norms ? norms + s * kPqCentroids : nullptr, alpha, out, out);
        }
    });
    return;
  }
  pool.parallel_for(blocks * m, [&](int64_t task) {
    const int64_t b = task / m, s = task % m;
    const int64_t begin = b * kTableBlock, count = std::min(kTableBlock, rows - begin);
    float* out = tables + begin * width + s * kPqCentroids;
    gemm_abt(count, kPqCentroids, dsub, alpha, x + begin * dim + s * dsub, dim,
             &pq.codebooks[s * kPqCentroids * dsub], dsub, out, width);
    if (norms)
      for (int64_t i = 0; i < count; ++i)
        for (int64_t j = 0; j < kPqCentroids; ++j) out[i * width + j] += norms[s * kPqCentroids + j];
  });
}

}  // namespace

void pq_list_table(const ProductQuantizer& pq, const float* centroid, float* table) {
  const int64_t dsub = pq.dsub();
  const PqTableKernels kernels = best_pq_table_kernels();
  const std::vector<float> origin(static_cast<size_t>(dsub), 0.0f);
  float norms[kPqCentroids];
  for (int64_t s = 0; s < pq.m; ++s) {
    const float* codebook = &pq.codebooks[s * kPqCentroids * dsub];
    float* out = table + s * kPqCentroids;
    kernels.inner_products(codebook, dsub, centroid + s * dsub, out);
    kernels.distances(codebook, dsub, origin.data(), norms);  // ||q_sj||^2
    pq_combine_tables(kPqCentroids, norms, 2.0f, out, out);
  }
}

void pq_list_tables(const ProductQuantizer& pq, ThreadPool& pool, int64_t nlist, const float* centroids,
                    float* tables) {
  if (nlist <= 0) return;
  const std::vector<float> norms = codeword_norms(pq);
  batched_tables(pq, pool, nlist, centroids, 2.0f, norms.data(), tables);
}

void pq_query_inner_products(const ProductQuantizer& pq, const float* x, float* table) {
  const int64_t dsub = pq.dsub();
  const PqTableKernels kernels = best_pq_table_kernels();
  for (int64_t s = 0; s < pq.m; ++s)
    kernels.inner_products(&pq.codebooks[s * kPqCentroids * dsub], dsub, x + s * dsub, table + s * kPqCentroids);
}

void pq_queries_inner_products(const ProductQuantizer& pq, ThreadPool& pool, int64_t nq, const float* x,
                               float* tables) {
  if (nq <= 0) return;
  batched_tables(pq, pool, nq, x, 1.0f, nullptr, tables);
}

void pq_query_l2_table(const ProductQuantizer& pq, const float* residual, float* table) {
  const int64_t dsub = pq.dsub();
  const PqTableKernels kernels = best_pq_table_kernels();
  for (int64_t s = 0; s < pq.m; ++s)
    kernels.distances(&pq.codebooks[s * kPqCentroids * dsub], dsub, residual + s * dsub, table + s * kPqCentroids);
}

void pq_combine_tables(int64_t size, const float* base, float alpha, const float* add, float* out) {
  if (alpha == 1.0f && !base) {
    if (out != add) std::copy(add, add + size, out);
  } else if (base) {
    int exponent = 0;
    if (std::fabs(std::frexp(alpha, &exponent)) == 0.5f) {
      // A power of two: the vector kernels' result is exact as here (pq_table_kernels.h).
      best_pq_table_kernels().combine(size, base, alpha, add, out);
      return;
    }
    for (int64_t i = 0; i < size; ++i) out[i] = base[i] + alpha * add[i];
  } else {
    for (int64_t i = 0; i < size; ++i) out[i] = alpha * add[i];
  }
}

}  // namespace quiver
