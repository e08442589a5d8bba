#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cpp/cluster/kmeans.h"
#include "cpp/core/thread_pool.h"
#include "reference.h"

namespace quiver {
namespace {

TEST(Kmeans, DeterministicForASeedWhateverTheThreads) {
  auto x = testing::random_vectors(3000, 10, 21);
  std::vector<float> first;
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    std::vector<float> centroids(37 * 10);
    KmeansOptions options;
    options.iterations = 8;
    kmeans(pool, 10, 3000, x.data(), 37, options, centroids.data(), nullptr);
    if (first.empty()) first = centroids;
    EXPECT_EQ(centroids, first) << threads << " threads";
  }
}

TEST(Kmeans, FindsSeparatedClusters) {
  // Four tight, far-apart blobs and k = 4: the objective must reach the blobs' own spread.
  const int64_t per = 200, dim = 3;
  std::vector<float> x;
  for (int b = 0; b < 4; ++b) {
    auto noise = testing::random_vectors(per, dim, 40 + b, 0.01f);
    for (int64_t i = 0; i < per * dim; ++i) x.push_back(noise[i] + (i % dim == 0 ? 100.0f * b : 0.0f));
  }
  ThreadPool pool(2);
  std::vector<float> centroids(4 * dim);
  std::vector<int64_t> labels(4 * per);
  KmeansOptions options;
  options.iterations = 25;
  // Random initialisation can put two seeds in one blob (a local minimum Lloyd cannot leave), so the
  // best of a few seeds must find the blobs.
  double best = 1e30;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    options.seed = seed;
    const KmeansResult r = kmeans(pool, dim, 4 * per, x.data(), 4, options, centroids.data(), labels.data());
    for (int64_t label : labels) EXPECT_TRUE(label >= 0 && label < 4);
    best = std::min(best, r.objective);
  }
  EXPECT_LT(best, 4 * per * dim * 0.01 * 0.01);
}

}  // namespace
}  // namespace quiver

namespace quiver {
namespace {

TEST(Kmeans, MoreClustersThanDistinctPointsStaysFinite) {
  // 50 points, only 5 distinct: most clusters start empty or duplicated and must not produce NaN.
  std::vector<float> x;
  for (int i = 0; i < 50; ++i) x.push_back(static_cast<float>(i % 5));
  ThreadPool pool(2);
  std::vector<float> centroids(20);
  std::vector<int64_t> labels(50);
  const KmeansResult r = kmeans(pool, 1, 50, x.data(), 20, KmeansOptions{}, centroids.data(), labels.data());
  for (float c : centroids) EXPECT_TRUE(std::isfinite(c));
  EXPECT_NEAR(r.objective, 0.0, 1e-9);
}

}  // namespace
}  // namespace quiver
