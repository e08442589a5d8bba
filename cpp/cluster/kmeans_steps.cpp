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
                                      const Label* labels, float* centroids) {
  // The points by label (a counting sort: within a label, by index).
  std::vector<int64_t> total(static_cast<size_t>(k), 0);
  for (int64_t i = 0; i < n; ++i) ++total[labels[i]];
  std::vector<int64_t> first(static_cast<size_t>(k + 1), 0);
  for (int64_t c = 0; c < k; ++c) first[c + 1] = first[c] + total[c];
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::vector<int64_t> cursor(first.begin(), first.end() - 1);
  for (int64_t i = 0; i < n; ++i) order[cursor[labels[i]]++] = i;
  pool.parallel_for(k, [&](int64_t c) {
    if (total[c] == 0) return;
    std::vector<double> sum(static_cast<size_t>(dim), 0.0);
    for (int64_t j = first[c]; j < first[c + 1]; ++j) {
      const float* point = x + order[j] * dim;
      for (int64_t d = 0; d < dim; ++d) sum[d] += point[d];
    }
    for (int64_t d = 0; d < dim; ++d) centroids[c * dim + d] = static_cast<float>(sum[d] / total[c]);
  });
  return total;
}

template std::vector<int64_t> update_centroids<int64_t>(ThreadPool&, int64_t, int64_t, const float*, int64_t,
                                                        const int64_t*, float*);
template std::vector<int64_t> update_centroids<uint8_t>(ThreadPool&, int64_t, int64_t, const float*, int64_t,
                                                        const uint8_t*, float*);

}  // namespace quiver
