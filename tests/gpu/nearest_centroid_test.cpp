// launch_nearest_centroid (k-means' assignment) against the exact search with k = 1 (the same labels
// and distances, bit for bit) on awkward shapes (partial tiles of points, centroids and dimensions,
// one of each), data far from the origin (most points ranked exactly), exact ties broken by the
// lowest index.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cuda/cluster/nearest_centroid.h"
#include "cuda/flat/kernels.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver {
namespace {

using testing::DeviceArray;

struct Nearest {
  std::vector<float> distances;
  std::vector<int64_t> labels;
  int32_t listed = 0;  // points the GEMM could not certify
};

Nearest nearest_on_device(const std::vector<float>& x, int64_t n, int64_t dim, const std::vector<float>& centroids,
                          int64_t k) {
  DeviceArray<float> x_d(x), c_d(centroids), norms(k), distances(n);
  DeviceArray<int64_t> labels(n);
  DeviceArray<int32_t> listed(n + 1);
  testing::TestDeviceScope scope;
  gpu::launch_row_norms(c_d.get(), k, dim, norms.get(), nullptr);
  gpu::launch_nearest_centroid(x_d.get(), n, dim, c_d.get(), norms.get(), k, distances.get(), labels.get(),
                               listed.get(), nullptr);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return {distances.to_host(), labels.to_host(), listed.to_host()[0]};
}

// The exact search's answer with k = 1.
Nearest nearest_by_search(const std::vector<float>& x, int64_t n, int64_t dim, const std::vector<float>& centroids,
                          int64_t k) {
  Nearest out{std::vector<float>(n), std::vector<int64_t>(n)};
  gpu::knn(testing::shared_resources(), Metric::l2, centroids.data(), nullptr, k, dim, x.data(), n, 1,
           out.distances.data(), out.labels.data());
  return out;
}

void expect_as_search(const std::vector<float>& x, int64_t n, int64_t dim, const std::vector<float>& centroids,
                      int64_t k, int32_t* listed) {
  const Nearest got = nearest_on_device(x, n, dim, centroids, k);
  const Nearest want = nearest_by_search(x, n, dim, centroids, k);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(got.labels[i], want.labels[i]) << "point " << i;
    ASSERT_EQ(got.distances[i], want.distances[i]) << "point " << i;
  }
  *listed = got.listed;
}

double squared_distance(const float* a, const float* b, int64_t dim) {
  double sum = 0;
  for (int64_t d = 0; d < dim; ++d) sum += (double(a[d]) - b[d]) * (double(a[d]) - b[d]);
  return sum;
}

TEST(GpuNearestCentroid, AsTheExactSearchOnAwkwardShapes) {
  QV_REQUIRE_GPU();
  struct Shape {
    int64_t n, dim, k;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{testing::sized(1000, 300), 13, 130}, Shape{129, 130, 7},
                        Shape{testing::sized(2000, 257), 24, 257}, Shape{testing::sized(1500, 200), 128, 1024},
                        Shape{5, 3, 200}, Shape{300, 16, 1}}) {
    SCOPED_TRACE(::testing::Message() << "n " << s.n << " dim " << s.dim << " k " << s.k);
    const auto x = testing::uniform_vectors(s.n, s.dim, 11, 3.0f);
    const auto centroids = testing::uniform_vectors(s.k, s.dim, 12, 3.0f);
    int32_t listed = 0;
    expect_as_search(x, s.n, s.dim, centroids, s.k, &listed);
    EXPECT_LT(listed, s.n / 10 + 1);  // most points certified by the GEMM
  }
}

TEST(GpuNearestCentroid, AsTheExactSearchFarFromTheOrigin) {
  QV_REQUIRE_GPU();
  // Clusters shifted 10 000 along every axis: the GEMM form cannot tell most points' nearest
  // centroids apart, and the exact ranking of the listed points answers them.
  const int64_t n = testing::sized(3000, 500), dim = 20, k = 50;
  auto x = testing::clustered_vectors(n, dim, 10, 3);
  auto centroids = testing::clustered_vectors(k, dim, 10, 3);  // the first k points
  for (auto* v : {&x, &centroids})
    for (float& value : *v) value += 1e4f;
  int32_t listed = 0;
  expect_as_search(x, n, dim, centroids, k, &listed);
  EXPECT_GT(listed, 0);
}

TEST(GpuNearestCentroid, ExactTiesGoToTheLowestIndex) {
  QV_REQUIRE_GPU();
  // Small integers: every value of the GEMM form is exact, so equal distances are equal floats.
  const int64_t n = testing::sized(777, 200), dim = 10, distinct = 40, k = 3 * distinct + 11;
  const auto x = testing::integer_vectors(n, dim, 5, 3);
  auto centroids = testing::integer_vectors(k, dim, 6, 3);
  for (int64_t c = distinct; c < k; ++c)  // every centroid beyond the first 40 repeats an earlier one
    std::copy_n(&centroids[(c % distinct) * dim], dim, &centroids[c * dim]);
  const Nearest got = nearest_on_device(x, n, dim, centroids, k);
  for (int64_t i = 0; i < n; ++i) {
    int64_t want = 0;
    double best = 1e300;
    for (int64_t c = 0; c < k; ++c) {
      const double d = squared_distance(&x[i * dim], &centroids[c * dim], dim);
      if (d < best) {
        best = d;
        want = c;
      }
    }
    ASSERT_EQ(got.labels[i], want) << "point " << i;
    ASSERT_EQ(got.distances[i], float(best)) << "point " << i;
  }
}

TEST(GpuNearestCentroid, ANanPointGetsAValidLabel) {
  QV_REQUIRE_GPU();
  const int64_t n = 3, dim = 4, k = 5;
  auto x = testing::uniform_vectors(n, dim, 7);
  x[dim + 2] = std::nanf("");
  const auto centroids = testing::uniform_vectors(k, dim, 8);
  const Nearest got = nearest_on_device(x, n, dim, centroids, k);
  EXPECT_EQ(got.labels[1], 0);
  EXPECT_EQ(got.listed, 1);
  for (int64_t i : {0, 2}) {
    EXPECT_GE(got.labels[i], 0);
    EXPECT_LT(got.labels[i], k);
  }
}

}  // namespace
}  // namespace quiver
