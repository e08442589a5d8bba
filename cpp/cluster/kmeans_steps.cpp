#include "cpp/cluster/kmeans_steps.h"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <utility>

#include "cpp/core/thread_pool.h"

namespace quiver {

namespace {
// Relative perturbation that separates the two halves of a split cluster.
constexpr float kSplitEpsilon = 1.0f / 1024;
}  // namespace

std::vector<int64_t> sample_indices(int64_t n, int64_t m, Random& random) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = 0; i < m; ++i) std::swap(order[i], order[i + static_cast<int64_t>(random.below(n - i))]);
  order.resize(static_cast<size_t>(m));
  return order;
}

void split_empty(int64_t dim, int64_t k, std::vector<int64_t>& counts, float* centroids, Random& random) {
  for (int64_t c = 0; c < k; ++c) {
    if (counts[c] != 0) continue;
    // Choose a donor with probability proportional to its size (at least 2 points to share).
    int64_t total = 0;
    for (int64_t j = 0; j < k; ++j) total += counts[j] > 1 ? counts[j] : 0;
    if (total == 0) return;  // fewer distinct points than clusters: nothing to split
    int64_t pick = static_cast<int64_t>(random.below(static_cast<uint64_t>(total)));
    int64_t donor = 0;
    for (; donor < k; ++donor) {
      const int64_t weight = counts[donor] > 1 ? counts[donor] : 0;
      if (pick < weight) break;
      pick -= weight;
    }
    float* a = centroids + c * dim;
    float* b = centroids + donor * dim;
    for (int64_t d = 0; d < dim; ++d) {
      const float sign = (d % 2 == 0) ? 1.0f : -1.0f;
      a[d] = b[d] * (1 + sign * kSplitEpsilon);
      b[d] = b[d] * (1 - sign * kSplitEpsilon);
    }
    counts[c] = counts[donor] / 2;
    counts[donor] -= counts[c];
  }
}

template <typename Label>
std::vector<int64_t> update_centroids(ThreadPool& pool, int64_t dim, int64_t n, const float* x, int64_t k,
                                      const Label* labels, int64_t slices, float* centroids) {
  slices = std::min(slices, std::max<int64_t>(1, n));
  std::vector<double> sums(static_cast<size_t>(slices * k * dim), 0.0);
  std::vector<int64_t> counts(static_cast<size_t>(slices * k), 0);
  pool.parallel_for(slices, [&](int64_t s) {
    double* sum = &sums[s * k * dim];
    for (int64_t i = n * s / slices; i < n * (s + 1) / slices; ++i) {
      const int64_t c = labels[i];
      ++counts[s * k + c];
      for (int64_t d = 0; d < dim; ++d) sum[c * dim + d] += x[i * dim + d];
    }
  });
  std::vector<int64_t> total(static_cast<size_t>(k), 0);
  pool.parallel_for(k, [&](int64_t c) {
    std::vector<double> mean(static_cast<size_t>(dim), 0.0);
    for (int64_t s = 0; s < slices; ++s) {
      total[c] += counts[s * k + c];
      for (int64_t d = 0; d < dim; ++d) mean[d] += sums[(s * k + c) * dim + d];
    }
    if (total[c] == 0) return;
    for (int64_t d = 0; d < dim; ++d) centroids[c * dim + d] = static_cast<float>(mean[d] / total[c]);
  });
  return total;
}

template std::vector<int64_t> update_centroids<int64_t>(ThreadPool&, int64_t, int64_t, const float*, int64_t,
                                                        const int64_t*, int64_t, float*);
template std::vector<int64_t> update_centroids<uint8_t>(ThreadPool&, int64_t, int64_t, const float*, int64_t,
                                                        const uint8_t*, int64_t, float*);

}  // namespace quiver
