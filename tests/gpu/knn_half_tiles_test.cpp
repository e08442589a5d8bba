// The fp32 mode's certified pass in IEEE half tiles (cuda/flat/knn.cu's half_tiles_take): over an
// index's rows of more than 128 values within half's range, the GEMM tiles multiply in half, the
// certificate bounds that rounding (certify.h, InputRounding::fp16), and the results are the exact
// float32 ones (exact_distances.h's sums, ties to the smaller row). Uniform and pixel-like rows (small
// integers, exact in half), both metrics, host queries large enough to arrive tile by tile, a query
// beyond half's range (its certificate fails: the float pass answers it), rows beyond it (TF32 tiles
// then), and the same searches with the half tiles switched off.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cuda/flat/knn_passes.h"
#include "exact_float.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver {
namespace {

using Problem = testing::KnnProblem;

struct Counts {
  int64_t tf32, fp16, sgemm, direct;
};

// The index's search (a DeviceMatrix of p.base), checked against the CPU's exact result.
Counts search_exact(const Problem& p, int64_t k) {
  gpu::Resources& resources = testing::shared_resources();
  auto matrix = gpu::make_matrix(resources, p.dim);
  gpu::matrix_append(resources, *matrix, p.n, p.base.data());
  std::vector<float> dist(size_t(p.nq * k));
  std::vector<int64_t> ids(size_t(p.nq * k));
  gpu::knn(resources, p.metric, *matrix, p.queries.data(), p.nq, k, dist.data(), ids.data());
  const gpu::KnnPassCounts c = gpu::last_knn_pass_counts();
  testing::expect_exact_knn(p, k, dist, ids);
  EXPECT_EQ(c.tf32 + c.fp16 + c.sgemm + c.direct, p.nq);
  return Counts{c.tf32, c.fp16, c.sgemm, c.direct};
}

// Integers 0 .. 255 (pixel-like), column means varying.
std::vector<float> pixels(int64_t n, int64_t dim, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> x(size_t(n * dim));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < dim; ++c) x[size_t(r * dim + c)] = float((gen() % 256) * (c % 5 + 1) / 5);
  return x;
}

TEST(GpuKnnHalfTiles, ExactOnUniformAndPixelRows) {
  QV_REQUIRE_GPU();
  uint32_t seed = 400;
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    for (int64_t k : {10, 100}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " k " << k);
      const Problem p = testing::uniform_problem(testing::sized(9001, 4001), 200, 300, metric, seed++);
      EXPECT_EQ(search_exact(p, k).fp16, p.nq);
    }
  }
  const int64_t n = testing::sized(8001, 3001), dim = 784, nq = 120;
  const Problem images{n, dim, nq, Metric::l2, pixels(n, dim, 410), pixels(nq, dim, 411)};
  EXPECT_GE(double(search_exact(images, 10).fp16), 0.9 * double(nq));
}

// Host queries of 8 MiB or more arrive in query tiles, each rounded to half as it comes.
TEST(GpuKnnHalfTiles, QueriesThatArriveByTile) {
  QV_REQUIRE_GPU();
  if (testing::skip_under_sanitizer(true)) GTEST_SKIP() << "the kernels of the other half-tile tests";
  const Problem p = testing::uniform_problem(601, 2048, 1030, Metric::l2, 420);  // 8.4 MB of queries
  EXPECT_GE(double(search_exact(p, 10).fp16), 0.9 * double(p.nq));
}

// A query with a value beyond half's range fails its certificate (an infinite residual) and the
// float pass answers it; rows beyond half's range take TF32 tiles.
TEST(GpuKnnHalfTiles, ValuesBeyondHalfsRange) {
  QV_REQUIRE_GPU();
  Problem p = testing::uniform_problem(testing::sized(9001, 4001), 160, 40, Metric::l2, 430);
  p.queries[size_t(7 * 160 + 3)] = 1e6f;
  const Counts some = search_exact(p, 10);
  EXPECT_EQ(some.fp16, p.nq - 1);
  EXPECT_EQ(some.sgemm + some.direct, 1);
  Problem wide = testing::uniform_problem(testing::sized(9001, 4001), 160, 40, Metric::l2, 431);
  wide.base[size_t(11 * 160)] = 40000.f;  // max ||y|| above 32752: centred rows could leave the range
  EXPECT_EQ(search_exact(wide, 10).fp16, 0);
}

// Switched off, the TF32 tiles answer the same searches with the same results.
TEST(GpuKnnHalfTiles, SwitchedOff) {
  QV_REQUIRE_GPU();
  const Problem p = testing::uniform_problem(testing::sized(9001, 4001), 200, 300, Metric::l2, 440);
  gpu::set_fp16_certified_enabled(false);
  const Counts c = search_exact(p, 10);
  gpu::set_fp16_certified_enabled(true);
  EXPECT_EQ(c.fp16, 0);
  EXPECT_EQ(c.tf32, p.nq);
}

}  // namespace
}  // namespace quiver
