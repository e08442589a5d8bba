// "Flat" k-NN search against a float64 brute-force reference: L2, inner product and cosine over
// awkward sizes, padding when k > n, duplicates and ties, custom 64-bit ids and automatic
// numbering.
#include <tuple>
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

const uint32_t kKs[] = {1, 7, 32, 100, 1000, 2048};

class CapiFlatSearch
    : public ::testing::TestWithParam<std::tuple<qv_metric_t, int64_t /*n*/, int64_t /*dim*/>> {
 protected:
  static void SetUpTestSuite() { ctx_ = MakeCpuContext(2).release(); }
  static void TearDownTestSuite() {
    qv_context_free(ctx_);
    ctx_ = nullptr;
  }
  static qv_context_t* ctx_;
};
qv_context_t* CapiFlatSearch::ctx_ = nullptr;

TEST_P(CapiFlatSearch, MatchesBruteForce) {
  ASSERT_NE(ctx_, nullptr) << qv_last_error_message();
  const qv_metric_t metric = std::get<0>(GetParam());
  const int64_t n = std::get<1>(GetParam());
  const int64_t dim = std::get<2>(GetParam());
  const uint64_t seed = static_cast<uint64_t>(n * 1000003 + dim * 101 + metric);

  std::vector<float> base = RandomVectors(n, dim, seed);
  // Five fresh queries and two that are base vectors themselves.
  const int64_t nq = 7;
  std::vector<float> queries = RandomVectors(5, dim, seed + 1);
  for (int64_t r : {int64_t(0), n - 1})
    queries.insert(queries.end(), base.begin() + r * dim, base.begin() + (r + 1) * dim);

  Index idx = MakeIndex(ctx_, dim, metric);
  ASSERT_TRUE(idx) << qv_last_error_message();
  QV_ASSERT_OK(qv_index_add(idx.get(), n, base.data(), nullptr));
  ASSERT_EQ(Count(idx.get()), n);
  std::vector<int64_t> ids = Iota(n);

  for (uint32_t k : kKs) {
    Results r;
    QV_ASSERT_OK(Search(idx.get(), queries, dim, k, nullptr, &r));
    ASSERT_EQ(static_cast<int64_t>(r.ids.size()), nq * k);
    EXPECT_TRUE(CheckKnn(metric, base, ids, dim, queries, k, r.distances, r.ids));
  }
}

std::string FlatName(
    const ::testing::TestParamInfo<std::tuple<qv_metric_t, int64_t, int64_t>>& info) {
  return std::string(MetricName(std::get<0>(info.param))) + "_n" +
         std::to_string(std::get<1>(info.param)) + "_dim" + std::to_string(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Sizes, CapiFlatSearch,
                         ::testing::Combine(::testing::Values(QV_METRIC_L2, QV_METRIC_INNER_PRODUCT,
                                                              QV_METRIC_COSINE),
                                            ::testing::Values(int64_t(1), int64_t(5), int64_t(33),
                                                              int64_t(1000), int64_t(1337)),
                                            ::testing::Values(int64_t(1), int64_t(3), int64_t(17),
                                                              int64_t(100), int64_t(784))),
                         FlatName);

class CapiFlat : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext(2);
    ASSERT_TRUE(ctx_) << qv_last_error_message();
  }
  Context ctx_;
};

TEST_F(CapiFlat, PaddingWhenKExceedsCount) {
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    const int64_t dim = 5, n = 3;
    std::vector<float> x = RandomVectors(n, dim, 31);
    Index idx = MakeIndex(ctx_.get(), dim, metric);
    ASSERT_TRUE(idx);
    QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
    std::vector<float> q = RandomVectors(2, dim, 32);
    for (uint32_t k : {4u, 10u, uint32_t(QV_MAX_K)}) {
      Results r;
      QV_ASSERT_OK(Search(idx.get(), q, dim, k, nullptr, &r));
      for (int64_t qi = 0; qi < 2; ++qi) {
        for (uint32_t j = 0; j < k; ++j) {
          int64_t id = r.ids[qi * k + j];
          float d = r.distances[qi * k + j];
          if (j < n) {
            EXPECT_GE(id, 0) << MetricName(metric) << " k " << k << " j " << j;
            EXPECT_TRUE(std::isfinite(d));
          } else {
            EXPECT_EQ(id, -1) << MetricName(metric) << " k " << k << " j " << j;
            EXPECT_EQ(d, MissingDistance(metric)) << MetricName(metric) << " k " << k;
          }
        }
      }
      EXPECT_TRUE(CheckKnn(metric, x, Iota(n), dim, q, k, r.distances, r.ids));
    }
  }
}

TEST_F(CapiFlat, EmptyIndexGivesOnlyPadding) {
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    const int64_t dim = 4;
    Index idx = MakeIndex(ctx_.get(), dim, metric);
    ASSERT_TRUE(idx);
    std::vector<float> q = RandomVectors(3, dim, 33);
    Results r;
    QV_ASSERT_OK(Search(idx.get(), q, dim, 5, nullptr, &r));
    for (size_t i = 0; i < r.ids.size(); ++i) {
      EXPECT_EQ(r.ids[i], -1);
      EXPECT_EQ(r.distances[i], MissingDistance(metric));
    }
  }
}

TEST_F(CapiFlat, NoQueriesIsOk) {
  const int64_t dim = 4;
  Index idx = MakeIndex(ctx_.get(), dim, QV_METRIC_L2);
  ASSERT_TRUE(idx);
  std::vector<float> x = RandomVectors(10, dim, 34);
  QV_ASSERT_OK(qv_index_add(idx.get(), 10, x.data(), nullptr));
  float d = 42.0f;
  int64_t id = 42;
  QV_EXPECT_OK(qv_index_search(idx.get(), 0, x.data(), 5, nullptr, &d, &id));
  EXPECT_EQ(d, 42.0f);
  EXPECT_EQ(id, 42);
}

TEST_F(CapiFlat, WritesExactlyNqTimesK) {
  // Outputs are nq x k: nothing is written past them.
  const int64_t dim = 9, n = 50, nq = 3;
  const uint32_t k = 11;
  Index idx = MakeIndex(ctx_.get(), dim, QV_METRIC_L2);
  ASSERT_TRUE(idx);
  std::vector<float> x = RandomVectors(n, dim, 35);
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
  std::vector<float> q = RandomVectors(nq, dim, 36);
  std::vector<float> d(nq * k + 8, 123.0f);
  std::vector<int64_t> ids(nq * k + 8, 456);
  QV_ASSERT_OK(qv_index_search(idx.get(), nq, q.data(), k, nullptr, d.data(), ids.data()));
  for (size_t i = nq * k; i < d.size(); ++i) {
    EXPECT_EQ(d[i], 123.0f);
    EXPECT_EQ(ids[i], 456);
  }
}

TEST_F(CapiFlat, DuplicatedVectors) {
  // 10 distinct vectors, each added 5 times under different ids: a query equal to one of them finds
  // its 5 copies first, with equal distances.
  const int64_t dim = 12, distinct = 10, copies = 5, n = distinct * copies;
  std::vector<float> uniq = RandomVectors(distinct, dim, 41);
  std::vector<float> x;
  std::vector<int64_t> ids;
  for (int64_t c = 0; c < copies; ++c)
    for (int64_t v = 0; v < distinct; ++v) {
      x.insert(x.end(), uniq.begin() + v * dim, uniq.begin() + (v + 1) * dim);
      ids.push_back(1000 + c * 97 + v * 7);
    }
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    Index idx = MakeIndex(ctx_.get(), dim, metric);
    ASSERT_TRUE(idx);
    QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), ids.data()));
    Results r;
    QV_ASSERT_OK(Search(idx.get(), uniq, dim, static_cast<uint32_t>(n), nullptr, &r));
    EXPECT_TRUE(CheckKnn(metric, x, ids, dim, uniq, static_cast<uint32_t>(n), r.distances, r.ids));
    if (metric == QV_METRIC_INNER_PRODUCT) continue;  // a vector need not be its own best match
    for (int64_t v = 0; v < distinct; ++v) {
      std::vector<int64_t> top(r.ids.begin() + v * n, r.ids.begin() + v * n + copies);
      std::sort(top.begin(), top.end());
      std::vector<int64_t> want;
      for (int64_t c = 0; c < copies; ++c) want.push_back(1000 + c * 97 + v * 7);
      EXPECT_EQ(top, want) << MetricName(metric) << " vector " << v;
      for (int64_t c = 1; c < copies; ++c)
        EXPECT_NEAR(r.distances[v * n + c], r.distances[v * n], 1e-5)
            << MetricName(metric) << " vector " << v;
    }
  }
}

TEST_F(CapiFlat, TiesOnAGrid) {
  // Integer points, many exactly equal distances: any order among ties is fine, nothing else is.
  const int64_t dim = 2;
  std::vector<float> x;
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 5; ++b) {
      x.push_back(float(a + 1));
      x.push_back(float(b + 1));
    }
  const int64_t n = 25;
  std::vector<float> q = {3, 3, 1, 1, 2.5f, 2.5f, 0, 6};
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    Index idx = MakeIndex(ctx_.get(), dim, metric);
    ASSERT_TRUE(idx);
    QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
    for (uint32_t k : {1u, 4u, 5u, 9u, 25u, 30u}) {
      Results r;
      QV_ASSERT_OK(Search(idx.get(), q, dim, k, nullptr, &r));
      EXPECT_TRUE(CheckKnn(metric, x, Iota(n), dim, q, k, r.distances, r.ids))
          << MetricName(metric);
    }
  }
}

TEST_F(CapiFlat, Custom64BitIds) {
  const int64_t dim = 16, n = 200;
  std::vector<float> x = RandomVectors(n, dim, 51);
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i)
    ids[i] = (int64_t(1) << 40) + i * 1000003 + (i % 2) * (int64_t(1) << 50);
  ids[7] = INT64_MAX - 1;
  ids[8] = 0;
  std::vector<float> q = RandomVectors(6, dim, 52);
  q.insert(q.end(), x.begin() + 7 * dim, x.begin() + 9 * dim);
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    Index idx = MakeIndex(ctx_.get(), dim, metric);
    ASSERT_TRUE(idx);
    QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), ids.data()));
    for (uint32_t k : {1u, 10u, 200u, 300u}) {
      Results r;
      QV_ASSERT_OK(Search(idx.get(), q, dim, k, nullptr, &r));
      EXPECT_TRUE(CheckKnn(metric, x, ids, dim, q, k, r.distances, r.ids)) << MetricName(metric);
      if (metric == QV_METRIC_L2) {
        EXPECT_EQ(r.ids[6 * k], INT64_MAX - 1);
        EXPECT_EQ(r.ids[7 * k], 0);
      }
    }
  }
}

// The id search returns for a query equal to row `row` of x (L2, k = 1).
int64_t IdOf(const qv_index_t* idx, const std::vector<float>& x, int64_t dim, int64_t row) {
  float d;
  int64_t id = -100;
  if (qv_index_search(idx, 1, &x[row * dim], 1, nullptr, &d, &id) != QV_OK) return -200;
  return id;
}

TEST_F(CapiFlat, NullIdsNumberAfterTheLargestId) {
  const int64_t dim = 8;
  Index idx = MakeIndex(ctx_.get(), dim, QV_METRIC_L2);
  ASSERT_TRUE(idx);
  std::vector<float> x = RandomVectors(20, dim, 61);

  // Empty index: 0, 1, 2, ...
  QV_ASSERT_OK(qv_index_add(idx.get(), 5, x.data(), nullptr));
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(IdOf(idx.get(), x, dim, i), i);

  // Then after explicit ids, the next batch continues after the largest.
  const int64_t big = int64_t(1) << 40;
  std::vector<int64_t> explicit_ids = {100, big, 50};
  QV_ASSERT_OK(qv_index_add(idx.get(), 3, &x[5 * dim], explicit_ids.data()));
  QV_ASSERT_OK(qv_index_add(idx.get(), 4, &x[8 * dim], nullptr));
  EXPECT_EQ(IdOf(idx.get(), x, dim, 5), 100);
  EXPECT_EQ(IdOf(idx.get(), x, dim, 6), big);
  EXPECT_EQ(IdOf(idx.get(), x, dim, 7), 50);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(IdOf(idx.get(), x, dim, 8 + i), big + 1 + i);

  // And the whole index agrees with the reference.
  std::vector<int64_t> ids = {0, 1, 2, 3, 4, 100, big, 50, big + 1, big + 2, big + 3, big + 4};
  std::vector<float> base(x.begin(), x.begin() + 12 * dim);
  std::vector<float> q = RandomVectors(5, dim, 62);
  Results r;
  QV_ASSERT_OK(Search(idx.get(), q, dim, 12, nullptr, &r));
  EXPECT_TRUE(CheckKnn(QV_METRIC_L2, base, ids, dim, q, 12, r.distances, r.ids));
  EXPECT_EQ(Count(idx.get()), 12);
}

TEST_F(CapiFlat, SeveralAddBatches) {
  const int64_t dim = 17;
  Index idx = MakeIndex(ctx_.get(), dim, QV_METRIC_INNER_PRODUCT);
  ASSERT_TRUE(idx);
  std::vector<float> all;
  float dummy[dim] = {};
  for (int64_t batch : {1, 30, 0, 64, 5}) {
    std::vector<float> x = RandomVectors(batch, dim, 70 + batch);
    QV_ASSERT_OK(qv_index_add(idx.get(), batch, batch ? x.data() : dummy, nullptr));
    all.insert(all.end(), x.begin(), x.end());
  }
  const int64_t n = static_cast<int64_t>(all.size()) / dim;
  EXPECT_EQ(Count(idx.get()), n);
  std::vector<float> q = RandomVectors(4, dim, 79);
  for (uint32_t k : {1u, 50u, 100u, 150u}) {
    Results r;
    QV_ASSERT_OK(Search(idx.get(), q, dim, k, nullptr, &r));
    EXPECT_TRUE(CheckKnn(QV_METRIC_INNER_PRODUCT, all, Iota(n), dim, q, k, r.distances, r.ids));
  }
}

TEST_F(CapiFlat, TrainIsAcceptedAndChangesNothing) {
  const int64_t dim = 6, n = 30;
  Index idx = MakeIndex(ctx_.get(), dim, QV_METRIC_L2);
  ASSERT_TRUE(idx);
  std::vector<float> x = RandomVectors(n, dim, 81);
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
  Results before, after;
  QV_ASSERT_OK(Search(idx.get(), x, dim, 5, nullptr, &before));
  std::vector<float> t = RandomVectors(100, dim, 82);
  QV_ASSERT_OK(qv_index_train(idx.get(), 100, t.data()));
  QV_ASSERT_OK(qv_index_train(idx.get(), 0, nullptr));
  EXPECT_EQ(Count(idx.get()), n);
  QV_ASSERT_OK(Search(idx.get(), x, dim, 5, nullptr, &after));
  EXPECT_TRUE(before == after);
}

TEST_F(CapiFlat, LargestDimension) {
  const int64_t dim = 65536, n = 3;
  Index idx = MakeIndex(ctx_.get(), dim, QV_METRIC_L2);
  ASSERT_TRUE(idx) << qv_last_error_message();
  std::vector<float> x = RandomVectors(n, dim, 91);
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
  Results r;
  QV_ASSERT_OK(Search(idx.get(), x, dim, 3, nullptr, &r));
  EXPECT_TRUE(CheckKnn(QV_METRIC_L2, x, Iota(n), dim, x, 3, r.distances, r.ids));
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(r.ids[i * 3], i);
}

TEST_F(CapiFlat, CosineIgnoresScale) {
  // Cosine of a vector and a positive multiple of it is 1; a negative multiple is -1.
  const int64_t dim = 10;
  std::vector<float> v = RandomVectors(1, dim, 95);
  std::vector<float> x;
  for (float s : {0.001f, 3.0f, -2.0f, 1000.0f})
    for (int64_t j = 0; j < dim; ++j) x.push_back(v[j] * s);
  Index idx = MakeIndex(ctx_.get(), dim, QV_METRIC_COSINE);
  ASSERT_TRUE(idx);
  QV_ASSERT_OK(qv_index_add(idx.get(), 4, x.data(), nullptr));
  Results r;
  QV_ASSERT_OK(Search(idx.get(), v, dim, 4, nullptr, &r));
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(r.distances[j], 1.0f, 1e-5);
  EXPECT_EQ(r.ids[3], 2);
  EXPECT_NEAR(r.distances[3], -1.0f, 1e-5);
}

}  // namespace
