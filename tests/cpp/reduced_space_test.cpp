// reduce_for_build (cpp/graph/reduced_space.h): narrow vectors are left alone; data that lies in a
// subspace smaller than the kept directions keeps its distances (the projection loses nothing, and
// the rank-deficient covariance exercises the basis completion); the result does not depend on the
// thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpp/core/random.h"
#include "cpp/core/thread_pool.h"
#include "cpp/graph/reduced_space.h"

namespace quiver {
namespace {

// n rows of dim floats spanning a `rank`-dimensional affine subspace: x = offset + A z.
std::vector<float> low_rank_rows(int64_t n, int64_t dim, int64_t rank, uint64_t seed) {
  Random random(seed);
  std::vector<double> a(static_cast<size_t>(dim * rank)), offset(static_cast<size_t>(dim));
  for (double& v : a) v = random.uniform() * 2 - 1;
  for (double& v : offset) v = 5 + random.uniform();
  std::vector<float> x(static_cast<size_t>(n * dim));
  std::vector<double> z(static_cast<size_t>(rank));
  for (int64_t i = 0; i < n; ++i) {
    for (double& v : z) v = random.uniform() * 2 - 1;
    for (int64_t d = 0; d < dim; ++d) {
      double sum = offset[d];
      for (int64_t r = 0; r < rank; ++r) sum += a[d * rank + r] * z[r];
      x[i * dim + d] = static_cast<float>(sum);
    }
  }
  return x;
}

double squared_distance(const float* a, const float* b, int64_t dim) {
  double sum = 0;
  for (int64_t d = 0; d < dim; ++d) sum += (double(a[d]) - b[d]) * (double(a[d]) - b[d]);
  return sum;
}

TEST(ReducedSpace, NarrowVectorsAreNotReduced) {
  ThreadPool pool(2);
  const auto x = low_rank_rows(50, kMinReducedInputDim - 1, 5, 1);
  EXPECT_EQ(reduce_for_build(pool, x.data(), 50, kMinReducedInputDim - 1, 7).dim, 0);
}

TEST(ReducedSpace, ASmallSubspaceKeepsItsDistances) {
  ThreadPool pool(2);
  constexpr int64_t n = 1201, dim = 300, rank = 20;
  const auto x = low_rank_rows(n, dim, rank, 2);
  const ReducedSpace space = reduce_for_build(pool, x.data(), n, dim, 7);
  ASSERT_EQ(space.dim, kReducedDim);
  ASSERT_EQ(space.vectors.size(), size_t(n * kReducedDim));
  for (int64_t i = 0; i < n; i += 37)
    for (int64_t j = 1; j < n; j += 101) {
      const double full = squared_distance(&x[i * dim], &x[j * dim], dim);
      const double reduced = squared_distance(&space.vectors[i * kReducedDim], &space.vectors[j * kReducedDim],
                                              kReducedDim);
      EXPECT_NEAR(reduced, full, 1e-3 * std::max(1.0, full)) << i << ", " << j;
    }
}

TEST(ReducedSpace, SameWhateverTheThreads) {
  constexpr int64_t n = 777, dim = 270;
  const auto x = low_rank_rows(n, dim, 150, 3);  // more directions than are kept
  ThreadPool one(1), three(3);
  const ReducedSpace a = reduce_for_build(one, x.data(), n, dim, 9);
  const ReducedSpace b = reduce_for_build(three, x.data(), n, dim, 9);
  EXPECT_EQ(a.vectors, b.vectors);
}

}  // namespace
}  // namespace quiver
