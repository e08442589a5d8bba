#include "cpp/cluster/kmeans.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "cpp/cluster/kmeans_steps.h"
#include "cpp/core/error.h"
#include "cpp/core/random.h"
#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/exact/knn.h"

namespace quiver {

namespace {

// Nearest centroid of each point, with its exact squared distance.
void assign(ThreadPool& pool, int64_t dim, int64_t n, const float* x, int64_t k,
            const float* centroids, int64_t* labels, float* distances) {
  const std::vector<float> norms = squared_norms(centroids, k, dim);
  Database db;
  db.x = centroids;
  db.norms = norms.data();
  db.n = k;
  db.dim = dim;
  db.metric = Metric::l2;
  exact_knn(pool, db, Queries{x, n}, 1, IdFilter{}, distances, labels);
}

}  // namespace

KmeansResult kmeans(ThreadPool& pool, int64_t dim, int64_t n, const float* x, int64_t k,
                    const KmeansOptions& options, float* centroids, int64_t* assignments) {
  Random random(options.seed);

  // Train on a seeded sample when there are many more points than the centroids need.
  std::vector<float> sample;
  const float* train = x;
  int64_t n_train = n;
  if (options.max_points_per_centroid > 0 && n / k >= options.max_points_per_centroid) {
    n_train = k * options.max_points_per_centroid;
    const std::vector<int64_t> picked = sample_indices(n, n_train, random);
    sample.resize(static_cast<size_t>(n_train * dim));
    for (int64_t i = 0; i < n_train; ++i)
      std::memcpy(&sample[i * dim], x + picked[i] * dim, sizeof(float) * dim);
    train = sample.data();
  }

  const std::vector<int64_t> seeds = sample_indices(n_train, k, random);
  for (int64_t c = 0; c < k; ++c)
    std::memcpy(centroids + c * dim, train + seeds[c] * dim, sizeof(float) * dim);

  std::vector<int64_t> labels(static_cast<size_t>(n_train));
  std::vector<float> distances(static_cast<size_t>(n_train));
  const Progress progress(options.progress, "k-means");
  for (int64_t it = 0; it < options.iterations; ++it) {
    assign(pool, dim, n_train, train, k, centroids, labels.data(), distances.data());
    std::vector<int64_t> counts = update_centroids(pool, dim, n_train, train, k, labels.data(), centroids);
    split_empty(dim, k, counts, centroids, random);
    progress.report(double(it + 1) / double(options.iterations));
  }

  // Final assignment of every point, for the outputs.
  std::vector<int64_t> final_labels(static_cast<size_t>(n));
  std::vector<float> final_distances(static_cast<size_t>(n));
  assign(pool, dim, n, x, k, centroids, final_labels.data(), final_distances.data());
  KmeansResult result;
  for (int64_t i = 0; i < n; ++i) result.objective += final_distances[i];
  if (assignments) std::copy(final_labels.begin(), final_labels.end(), assignments);
  return result;
}

}  // namespace quiver
