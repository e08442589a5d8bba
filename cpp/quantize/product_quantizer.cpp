#include "cpp/quantize/product_quantizer.h"

#include <algorithm>
#include <cstring>

#include "cpp/backend/gpu.h"
#include "cpp/cluster/kmeans.h"
#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/core/random.h"
#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/quantize/pq_assign.h"
#include "cpp/quantize/subspace_kmeans.h"
#include "cpp/quantize/training_sample.h"

namespace quiver {

namespace {

// Vectors per encoding task: enough work to amortise a task, small enough to balance the threads.
constexpr int64_t kEncodeBlock = 64;

// The codebooks transposed per sub-space (m x dsub x 256), the layout the assignment kernels read.
std::vector<float> transposed_codebooks(const ProductQuantizer& pq) {
  const int64_t dsub = pq.dsub();
  std::vector<float> t(pq.codebooks.size());
  for (int64_t s = 0; s < pq.m; ++s)
    for (int64_t j = 0; j < kPqCentroids; ++j)
      for (int64_t d = 0; d < dsub; ++d)
        t[(s * dsub + d) * kPqCentroids + j] = pq.codebooks[(s * kPqCentroids + j) * dsub + d];
  return t;
}

}  // namespace

void check_pq_shape(int64_t dim, int64_t m) {
  require(dim >= 1, "PQ: dim = ", dim, " must be at least 1");
  require(m >= 1, "PQ: M = ", m, " must be at least 1");
  require(dim % m == 0, "PQ: M = ", m, " does not divide dim = ", dim);
}

ProductQuantizer train_product_quantizer(Context& context, int64_t dim, int64_t m, int64_t n,
                                         const float* x, uint64_t seed) {
  return train_product_quantizer(context, dim, m, n, x, seed, PqTrainingOptions{});
}

ProductQuantizer train_product_quantizer(Context& context, int64_t dim, int64_t m, int64_t n,
                                         const float* x, uint64_t seed, const PqTrainingOptions& options) {
  check_pq_shape(dim, m);
  require(n >= kPqCentroids, "PQ training needs at least ", kPqCentroids, " vectors, got ", n);
  require(x != nullptr, "PQ training vectors: null pointer");
  require(options.iterations >= 0, "PQ training: iterations = ", options.iterations, " must be >= 0");
  check_vectors("PQ training vectors", x, n, dim, false);

  Random random(seed);
  const int64_t n_train = std::min(n, std::max(kPqCentroids, options.max_training_vectors));
  std::vector<int64_t> rows;
  if (n_train < n) rows = sample_rows(n, n_train, random);

  ProductQuantizer pq;
  pq.dim = dim;
  pq.m = m;
  const int64_t dsub = pq.dsub();
  pq.codebooks.resize(static_cast<size_t>(m * kPqCentroids * dsub));
  std::vector<float> sub(static_cast<size_t>(n_train * dsub));
  for (int64_t s = 0; s < m; ++s) {
    for (int64_t i = 0; i < n_train; ++i) {
      const int64_t row = rows.empty() ? i : rows[i];
      std::memcpy(&sub[i * dsub], x + row * dim + s * dsub, sizeof(float) * dsub);
    }
    KmeansOptions kmeans_options;
    kmeans_options.iterations = options.iterations;
    kmeans_options.seed = random.next();  // each sub-space its own seed, derived from `seed`
    kmeans_options.max_points_per_centroid = 0;  // already sampled above
    float* codebook = &pq.codebooks[s * kPqCentroids * dsub];
    if (context.device() == DeviceKind::cuda) {
      gpu::kmeans(context.gpu(), dsub, n_train, sub.data(), kPqCentroids, kmeans_options, codebook, nullptr);
    } else {
      subspace_kmeans(context.pool(), dsub, n_train, sub.data(), kmeans_options, codebook);
    }
  }
  return pq;
}

void pq_encode(const ProductQuantizer& pq, ThreadPool& pool, int64_t n, const float* x, uint8_t* codes) {
  if (n <= 0) return;
  const int64_t dim = pq.dim, m = pq.m, dsub = pq.dsub();
  const std::vector<float> codebook_t = transposed_codebooks(pq);
  const PqAssignFn assign = best_pq_assign();
  const int64_t blocks = (n + kEncodeBlock - 1) / kEncodeBlock;
  pool.parallel_for(blocks, [&](int64_t b) {
    const int64_t begin = b * kEncodeBlock, rows = std::min(kEncodeBlock, n - begin);
    for (int64_t s = 0; s < m; ++s)
      assign(x + begin * dim + s * dsub, dim, rows, dsub, &codebook_t[s * dsub * kPqCentroids],
             codes + begin * m + s, m);
  });
}

void pq_decode(const ProductQuantizer& pq, int64_t n, const uint8_t* codes, float* x) {
  const int64_t dim = pq.dim, m = pq.m, dsub = pq.dsub();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = 0; s < m; ++s)
      std::memcpy(x + i * dim + s * dsub, &pq.codebooks[(s * kPqCentroids + codes[i * m + s]) * dsub],
                  sizeof(float) * dsub);
}

}  // namespace quiver
