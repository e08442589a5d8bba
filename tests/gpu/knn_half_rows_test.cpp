// The 16-bit rows an index's DeviceMatrix keeps for searches of a few queries (cuda/flat/half_rows.h):
// the GEMV pass reads them, the certificate bounds their rounding, and the results stay the exact
// float32 ones (exact_distances.h's sums, ties to the smaller row) whether the rounded pass certifies
// a query or leaves it to the float pass. Dimensions that take them and dimensions that do not, both
// metrics, values half cannot hold, values in half's subnormal range, near-duplicates, appends within
// and beyond the storage's capacity, removals, and two threads searching at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>
#include <vector>

#include "cuda/flat/device_matrix.h"
#include "cuda/flat/half_rows.h"
#include "cuda/flat/knn_passes.h"
#include "exact_float.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver {
namespace {

using Problem = testing::KnnProblem;

// Rows enough for the 16-bit rows to be made (kMinHalfRowsBytes of floats), odd.
int64_t rows_for(int64_t dim) { return gpu::kMinHalfRowsBytes / (int64_t(sizeof(float)) * dim) + 101; }

// Searches the matrix (which holds p.base) with p.queries and checks the exact result; returns how
// many queries the pass over the 16-bit rows certified.
int64_t search_exact(gpu::DeviceMatrix& matrix, const Problem& p, int64_t k) {
  std::vector<float> dist(size_t(p.nq * k));
  std::vector<int64_t> ids(size_t(p.nq * k));
  gpu::knn(testing::shared_resources(), p.metric, matrix, p.queries.data(), p.nq, k, dist.data(), ids.data());
  const gpu::KnnPassCounts c = gpu::last_knn_pass_counts();
  EXPECT_EQ(c.sgemm + c.direct, p.nq);
  testing::expect_exact_knn(p, k, dist, ids);
  return c.half_rows;
}

gpu::DeviceMatrixPtr matrix_of(const Problem& p) {
  auto matrix = gpu::make_matrix(testing::shared_resources(), p.dim);
  gpu::matrix_append(testing::shared_resources(), *matrix, p.n, p.base.data());
  return matrix;
}

TEST(GpuKnnHalfRows, ExactForEveryDimensionAndMetric) {
  QV_REQUIRE_GPU();
  uint32_t seed = 300;
  // 8 .. 256 in steps of 8 take them; 100 (not a multiple of 8) and 264 (too long) do not.
  for (int64_t dim : {8, 96, 128, 256, 100, 264}) {
    if (testing::skip_under_sanitizer(dim == 8 || dim == 264)) continue;
    for (Metric metric : {Metric::l2, Metric::inner_product}) {
      const Problem p = testing::uniform_problem(rows_for(dim), dim, 3, metric, seed++);
      auto matrix = matrix_of(p);
      const int64_t float_bytes = gpu::matrix_device_bytes(*matrix);
      for (int64_t nq : {1, 3}) {
        for (int64_t k : {1, 10, 48}) {
          SCOPED_TRACE(::testing::Message() << "dim " << dim << " " << metric_name(metric) << " nq " << nq << " k "
                                            << k);
          Problem some = p;
          some.nq = nq;
          some.queries.resize(size_t(nq * dim));
          // Uniform data: the rounded rows' bound holds for every query.
          EXPECT_EQ(search_exact(*matrix, some, k), gpu::half_rows_fit(dim) ? nq : 0);
        }
      }
      const int64_t half_bytes = gpu::matrix_device_bytes(*matrix) - float_bytes;
      EXPECT_EQ(half_bytes > 0, gpu::half_rows_fit(dim));
      EXPECT_LE(half_bytes, float_bytes / 2 + 16);
    }
  }
}

// Values beyond half's range: no 16-bit rows (the float pass answers), until those rows are removed.
TEST(GpuKnnHalfRows, ValuesBeyondHalfsRange) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  Problem p = testing::uniform_problem(rows_for(64), 64, 2, Metric::l2, 310);
  p.base[size_t(5 * 64 + 7)] = 70000.f;
  auto matrix = matrix_of(p);
  EXPECT_EQ(search_exact(*matrix, p, 10), 0);
  const int64_t row = 5;
  gpu::matrix_remove_rows(resources, *matrix, 1, &row);
  p.base.erase(p.base.begin() + 5 * 64, p.base.begin() + 6 * 64);
  --p.n;
  EXPECT_EQ(search_exact(*matrix, p, 10), p.nq);
}

// Values of half's subnormal range (rounded to multiples of 2^-24) and near-duplicates below half's
// resolution: the results are exact, through the rounded pass or the float pass after it.
TEST(GpuKnnHalfRows, TinyValuesAndNearDuplicates) {
  QV_REQUIRE_GPU();
  std::mt19937 gen(320);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  const int64_t dim = 32, n = rows_for(dim);
  Problem tiny{n, dim, 2, Metric::l2, std::vector<float>(size_t(n * dim)), std::vector<float>(size_t(2 * dim))};
  for (auto& v : tiny.base) v = 3e-6f * unit(gen);
  for (auto& v : tiny.queries) v = 3e-6f * unit(gen);
  auto tiny_matrix = matrix_of(tiny);
  search_exact(*tiny_matrix, tiny, 10);

  Problem near{n, dim, 2, Metric::l2, std::vector<float>(size_t(n * dim)), std::vector<float>(size_t(2 * dim))};
  std::vector<float> centre(static_cast<size_t>(dim));
  for (auto& v : centre) v = unit(gen);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < dim; ++c) near.base[size_t(r * dim + c)] = centre[size_t(c)] + 1e-4f * unit(gen);
  for (int64_t c = 0; c < dim; ++c) {
    near.queries[size_t(c)] = centre[size_t(c)];
    near.queries[size_t(dim + c)] = centre[size_t(c)] + 1e-4f * unit(gen);
  }
  auto near_matrix = matrix_of(near);
  EXPECT_LT(search_exact(*near_matrix, near, 10), near.nq);  // half's 2^-11 cannot order them
}

// Rows appended within the storage's capacity are rounded too; beyond it the storage grows and the
// rows are made again; a query equal to an appended row finds it first.
TEST(GpuKnnHalfRows, Appends) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const int64_t dim = 48, n = rows_for(dim);
  Problem p = testing::uniform_problem(n + 6000, dim, 1, Metric::l2, 330);
  auto matrix = gpu::make_matrix(resources, dim);
  Problem part = p;
  // n rows, then 1000: the capacity grows to 1.5 n.
  for (int64_t rows : {n, n + 1000, n + 4000, n + 6000}) {
    const int64_t before = gpu::matrix_rows(*matrix);
    gpu::matrix_append(resources, *matrix, rows - before, p.base.data() + before * dim);
    part.n = rows;
    part.base.assign(p.base.begin(), p.base.begin() + rows * dim);
    // The last row appended, as the query.
    part.queries.assign(p.base.begin() + (rows - 1) * dim, p.base.begin() + rows * dim);
    SCOPED_TRACE(::testing::Message() << "rows " << rows);
    EXPECT_EQ(search_exact(*matrix, part, 10), 1);
  }
  // A value half cannot hold, appended within the capacity: the float pass from then on.
  std::vector<float> wide(size_t(dim), 0.5f);
  wide[3] = -1e5f;
  gpu::matrix_append(resources, *matrix, 1, wide.data());
  part.base.insert(part.base.end(), wide.begin(), wide.end());
  ++part.n;
  EXPECT_EQ(search_exact(*matrix, part, 10), 0);
}

// Two threads search one matrix at once, the first searches of both making the rows.
TEST(GpuKnnHalfRows, TwoThreadsAtOnce) {
  QV_REQUIRE_GPU();
  const Problem p = testing::uniform_problem(rows_for(128), 128, 2, Metric::l2, 340);
  auto matrix = matrix_of(p);
  std::vector<std::vector<int64_t>> found(2, std::vector<int64_t>(10));
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      testing::TestDeviceScope scope;
      std::vector<float> dist(10);
      gpu::knn(testing::shared_resources(), p.metric, *matrix, p.queries.data() + t * p.dim, 1, 10, dist.data(),
               found[size_t(t)].data());
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<float> want_d;
  std::vector<int64_t> want_i;
  testing::exact_knn_reference(p, 10, nullptr, want_d, want_i);
  EXPECT_EQ(found[0], std::vector<int64_t>(want_i.begin(), want_i.begin() + 10));
  EXPECT_EQ(found[1], std::vector<int64_t>(want_i.begin() + 10, want_i.end()));
}

}  // namespace
}  // namespace quiver
