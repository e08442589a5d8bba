// The exact k-NN engine against a float64 brute force, over the awkward sizes and every path of the
// tiling (query blocks, database split into chunks, candidate batches for large k).
#include <gtest/gtest.h>

#include <cmath>

#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/exact/knn.h"
#include "reference.h"

namespace quiver {
namespace {

struct Case {
  int64_t n, dim, nq, k;
  Metric metric;
};

void check_case(const Case& c, int threads) {
  ThreadPool pool(threads);
  auto base = testing::random_vectors(c.n, c.dim, 1 + c.n);
  auto queries = testing::random_vectors(c.nq, c.dim, 2 + c.nq);
  std::vector<float> norms(c.n);
  for (int64_t i = 0; i < c.n; ++i) norms[i] = squared_norm(&base[i * c.dim], c.dim);
  Database db;
  db.x = base.data();
  db.norms = norms.data();
  db.n = c.n;
  db.dim = c.dim;
  db.metric = c.metric;
  std::vector<float> distances(c.nq * c.k);
  std::vector<int64_t> ids(c.nq * c.k);
  exact_knn(pool, db, Queries{queries.data(), c.nq}, c.k, IdFilter{}, distances.data(), ids.data());

  const bool l2 = c.metric == Metric::l2;
  const double tolerance = 1e-4 * c.dim;
  for (int64_t q = 0; q < c.nq; ++q) {
    auto ref = testing::reference_ranking(l2, &queries[q * c.dim], base.data(), c.n, c.dim);
    for (int64_t i = 0; i < c.k; ++i) {
      const float d = distances[q * c.k + i];
      const int64_t id = ids[q * c.k + i];
      if (i >= c.n) {
        EXPECT_EQ(id, -1);
        EXPECT_EQ(d, missing_distance(c.metric));
        continue;
      }
      ASSERT_NEAR(d, ref[i].first, tolerance) << "query " << q << " rank " << i;
      if (id != ref[i].second) {
        // Only a tie (within rounding) may swap ids.
        const double own = testing::reference_distance(l2, &queries[q * c.dim], &base[id * c.dim], c.dim);
        EXPECT_NEAR(own, ref[i].first, tolerance) << "query " << q << " rank " << i;
      }
    }
  }
}

TEST(ExactKnn, MatchesReferenceOnAwkwardSizes) {
  const Case cases[] = {
      {1, 1, 1, 1, Metric::l2},        {5, 3, 7, 7, Metric::l2},
      {33, 17, 5, 32, Metric::inner_product}, {1000, 100, 130, 100, Metric::l2},
      {1337, 17, 3, 7, Metric::l2},    {2500, 33, 260, 10, Metric::inner_product},
      {3000, 5, 2, 2048, Metric::l2},  {100, 8, 300, 2048, Metric::l2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "n=" << c.n << " dim=" << c.dim << " nq=" << c.nq << " k=" << c.k);
    check_case(c, 2);
  }
}

TEST(ExactKnn, SameResultsForEveryThreadCount) {
  auto base = testing::random_vectors(5000, 24, 7);
  auto queries = testing::random_vectors(50, 24, 8);
  std::vector<float> norms(5000);
  for (int64_t i = 0; i < 5000; ++i) norms[i] = squared_norm(&base[i * 24], 24);
  Database db{base.data(), norms.data(), 5000, 24, nullptr, Metric::l2};
  std::vector<int64_t> first;
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    std::vector<float> d(50 * 10);
    std::vector<int64_t> ids(50 * 10);
    exact_knn(pool, db, Queries{queries.data(), 50}, 10, IdFilter{}, d.data(), ids.data());
    if (first.empty()) first = ids;
    EXPECT_EQ(ids, first) << threads << " threads";
  }
}

TEST(ExactKnn, TiesGoToTheSmallerRow) {
  // Every database vector is the same: all distances tie.
  std::vector<float> base(300 * 4, 0.5f), norms(300, 1.0f), query(4, 0.0f);
  Database db{base.data(), norms.data(), 300, 4, nullptr, Metric::l2};
  ThreadPool pool(2);
  std::vector<float> d(5);
  std::vector<int64_t> ids(5);
  exact_knn(pool, db, Queries{query.data(), 1}, 5, IdFilter{}, d.data(), ids.data());
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(ExactKnn, FilterKeepsOnlyAllowedIds) {
  auto base = testing::random_vectors(2000, 8, 3);
  std::vector<float> norms(2000);
  for (int64_t i = 0; i < 2000; ++i) norms[i] = squared_norm(&base[i * 8], 8);
  std::vector<uint8_t> bits(2000 / 8, 0);
  for (int64_t id = 0; id < 2000; id += 7) bits[id / 8] |= uint8_t(1u << (id % 8));
  IdFilter filter{bits.data(), 2000};
  Database db{base.data(), norms.data(), 2000, 8, nullptr, Metric::l2};
  ThreadPool pool(2);
  auto queries = testing::random_vectors(3, 8, 4);
  std::vector<float> d(3 * 300);
  std::vector<int64_t> ids(3 * 300);
  exact_knn(pool, db, Queries{queries.data(), 3}, 300, filter, d.data(), ids.data());
  for (int64_t q = 0; q < 3; ++q) {
    int64_t found = 0;
    for (int64_t i = 0; i < 300; ++i) {
      const int64_t id = ids[q * 300 + i];
      if (id < 0) continue;
      ++found;
      EXPECT_EQ(id % 7, 0);
    }
    EXPECT_EQ(found, 286);  // ceil(2000 / 7) allowed ids, fewer than k
  }
}

}  // namespace
}  // namespace quiver
