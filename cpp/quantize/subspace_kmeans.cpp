#include "cpp/quantize/subspace_kmeans.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpp/cluster/kmeans_steps.h"
#include "cpp/core/random.h"
#include "cpp/core/thread_pool.h"
#include "cpp/quantize/pq_assign.h"
#include "cpp/quantize/product_quantizer.h"

namespace quiver {

namespace {

// Points per assignment task.
constexpr int64_t kAssignBlock = 1024;

}  // namespace

void subspace_kmeans(ThreadPool& pool, int64_t dim, int64_t n, const float* x, const KmeansOptions& options,
                     float* centroids) {
  constexpr int64_t k = kPqCentroids;
  Random random(options.seed);
  const std::vector<int64_t> seeds = sample_indices(n, k, random);
  for (int64_t c = 0; c < k; ++c) std::memcpy(centroids + c * dim, x + seeds[c] * dim, sizeof(float) * dim);

  const PqAssignFn assign = best_pq_assign();
  std::vector<float> transposed(static_cast<size_t>(dim * k));
  std::vector<uint8_t> labels(static_cast<size_t>(n));
  for (int64_t it = 0; it < options.iterations; ++it) {
    for (int64_t c = 0; c < k; ++c)
      for (int64_t d = 0; d < dim; ++d) transposed[d * k + c] = centroids[c * dim + d];
    pool.parallel_for((n + kAssignBlock - 1) / kAssignBlock, [&](int64_t b) {
      const int64_t begin = b * kAssignBlock, rows = std::min(kAssignBlock, n - begin);
      assign(x + begin * dim, dim, rows, dim, transposed.data(), &labels[begin], 1);
    });

    std::vector<int64_t> counts = update_centroids(pool, dim, n, x, k, labels.data(), centroids);
    split_empty(dim, k, counts, centroids, random);
  }
}

}  // namespace quiver
