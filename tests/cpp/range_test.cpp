#include <gtest/gtest.h>

#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/exact/range.h"
#include "reference.h"

namespace quiver {
namespace {

TEST(ExactRange, MatchesReference) {
  ThreadPool pool(2);
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    const int64_t n = 1500, dim = 13, nq = 40;
    auto base = testing::random_vectors(n, dim, 11);
    auto queries = testing::random_vectors(nq, dim, 12);
    std::vector<float> norms(n);
    for (int64_t i = 0; i < n; ++i) norms[i] = squared_norm(&base[i * dim], dim);
    Database db{base.data(), norms.data(), n, dim, nullptr, metric};
    const bool l2 = metric == Metric::l2;
    const float radius = l2 ? 2.5f : 1.5f;
    RangeResult r = exact_range(pool, db, Queries{queries.data(), nq}, radius, IdFilter{});
    ASSERT_EQ(r.lims.size(), size_t(nq + 1));
    for (int64_t q = 0; q < nq; ++q) {
      std::vector<int64_t> expected;
      for (const auto& [d, row] : testing::reference_ranking(l2, &queries[q * dim], base.data(), n, dim))
        // Rows within rounding of the radius may go either way; leave them out of the comparison.
        if (l2 ? d <= radius - 1e-4 : d >= radius + 1e-4) expected.push_back(row);
      std::vector<int64_t> got(r.ids.begin() + r.lims[q], r.ids.begin() + r.lims[q + 1]);
      for (int64_t row : expected) EXPECT_NE(std::find(got.begin(), got.end(), row), got.end());
      for (int64_t i = r.lims[q]; i < r.lims[q + 1]; ++i) {
        EXPECT_TRUE(l2 ? r.distances[i] <= radius : r.distances[i] >= radius);
        if (i > r.lims[q]) EXPECT_TRUE(l2 ? r.distances[i - 1] <= r.distances[i] : r.distances[i - 1] >= r.distances[i]);
      }
    }
  }
}

}  // namespace
}  // namespace quiver
