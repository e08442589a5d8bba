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
// Points are summed in this many fixed slices, each by one task, and the slices added in order: the
// sums are then the same for every thread count (as in quiver::kmeans).
constexpr int64_t kUpdateSlices = 16;

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
  const int64_t slices = std::min(kUpdateSlices, n);
  std::vector<double> sums(static_cast<size_t>(slices * k * dim));
  std::vector<int64_t> slice_counts(static_cast<size_t>(slices * k));
  for (int64_t it = 0; it < options.iterations; ++it) {
    for (int64_t c = 0; c < k; ++c)
      for (int64_t d = 0; d < dim; ++d) transposed[d * k + c] = centroids[c * dim + d];
    pool.parallel_for((n + kAssignBlock - 1) / kAssignBlock, [&](int64_t b) {
      const int64_t begin = b * kAssignBlock, rows = std::min(kAssignBlock, n - begin);
      assign(x + begin * dim, dim, rows, dim, transposed.data(), &labels[begin], 1);
    });

    std::fill(sums.begin(), sums.end(), 0.0);
    std::fill(slice_counts.begin(), slice_counts.end(), 0);
    pool.parallel_for(slices, [&](int64_t s) {
      double* sum = &sums[s * k * dim];
      int64_t* count = &slice_counts[s * k];
      for (int64_t i = n * s / slices; i < n * (s + 1) / slices; ++i) {
        const int64_t c = labels[i];
        ++count[c];
        for (int64_t d = 0; d < dim; ++d) sum[c * dim + d] += x[i * dim + d];
      }
    });
    std::vector<int64_t> counts(static_cast<size_t>(k), 0);
    for (int64_t c = 0; c < k; ++c) {
      std::vector<double> mean(static_cast<size_t>(dim), 0.0);
      for (int64_t s = 0; s < slices; ++s) {
        counts[c] += slice_counts[s * k + c];
        for (int64_t d = 0; d < dim; ++d) mean[d] += sums[(s * k + c) * dim + d];
      }
      if (counts[c] == 0) continue;  // left for split_empty
      for (int64_t d = 0; d < dim; ++d) centroids[c * dim + d] = static_cast<float>(mean[d] / counts[c]);
    }
    split_empty(dim, k, counts, centroids, random);
  }
}

}  // namespace quiver
