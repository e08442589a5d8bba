// qv_knn: exact k-NN without an index, against the float64 reference; ids are row numbers.
#include <tuple>
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

class CapiKnn
    : public ::testing::TestWithParam<std::tuple<qv_metric_t, int64_t /*n*/, int64_t /*dim*/>> {
 protected:
  static void SetUpTestSuite() { ctx_ = MakeCpuContext(2).release(); }
  static void TearDownTestSuite() {
    qv_context_free(ctx_);
    ctx_ = nullptr;
  }
  static qv_context_t* ctx_;
};
qv_context_t* CapiKnn::ctx_ = nullptr;

TEST_P(CapiKnn, MatchesBruteForce) {
  ASSERT_NE(ctx_, nullptr);
  const qv_metric_t metric = std::get<0>(GetParam());
  const int64_t n = std::get<1>(GetParam()), dim = std::get<2>(GetParam());
  const uint64_t seed = static_cast<uint64_t>(7 * n + 13 * dim + metric);
  std::vector<float> base = RandomVectors(n, dim, seed);
  const int64_t nq = 6;
  std::vector<float> q = RandomVectors(nq - 1, dim, seed + 1);
  q.insert(q.end(), base.begin(), base.begin() + dim);
  for (uint32_t k : {1u, 7u, 100u, 2048u}) {
    std::vector<float> d(nq * k);
    std::vector<int64_t> ids(nq * k);
    QV_ASSERT_OK(
        qv_knn(ctx_, metric, dim, n, base.data(), nq, q.data(), k, nullptr, d.data(), ids.data()));
    EXPECT_TRUE(CheckKnn(metric, base, Iota(n), dim, q, k, d, ids));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, CapiKnn,
    ::testing::Combine(::testing::Values(QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE),
                       ::testing::Values(int64_t(1), int64_t(33), int64_t(1000)),
                       ::testing::Values(int64_t(1), int64_t(17), int64_t(100))),
    [](const ::testing::TestParamInfo<std::tuple<qv_metric_t, int64_t, int64_t>>& info) {
      return std::string(MetricName(std::get<0>(info.param))) + "_n" +
             std::to_string(std::get<1>(info.param)) + "_dim" +
             std::to_string(std::get<2>(info.param));
    });

class CapiKnnMisc : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext(2);
    ASSERT_TRUE(ctx_);
    base_ = RandomVectors(n_, dim_, 601);
    q_ = RandomVectors(nq_, dim_, 602);
    d_.assign(nq_ * k_, 0.0f);
    ids_.assign(nq_ * k_, 0);
  }
  qv_status_t Knn(qv_context_t* ctx, qv_metric_t metric, int64_t dim, int64_t n, const float* base,
                  int64_t nq, const float* q, uint32_t k, float* d, int64_t* ids) {
    return qv_knn(ctx, metric, dim, n, base, nq, q, k, nullptr, d, ids);
  }
  const int64_t dim_ = 5, n_ = 30, nq_ = 3;
  const uint32_t k_ = 4;
  Context ctx_;
  std::vector<float> base_, q_, d_;
  std::vector<int64_t> ids_;
};

TEST_F(CapiKnnMisc, AgreesWithFlatIndex) {
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    Index idx = MakeIndex(ctx_.get(), dim_, metric);
    ASSERT_TRUE(idx);
    QV_ASSERT_OK(qv_index_add(idx.get(), n_, base_.data(), nullptr));
    Results r;
    QV_ASSERT_OK(Search(idx.get(), q_, dim_, k_, nullptr, &r));
    QV_ASSERT_OK(qv_knn(ctx_.get(), metric, dim_, n_, base_.data(), nq_, q_.data(), k_, nullptr,
                        d_.data(), ids_.data()));
    EXPECT_EQ(ids_, r.ids) << MetricName(metric);
    for (size_t i = 0; i < d_.size(); ++i) EXPECT_NEAR(d_[i], r.distances[i], 1e-4);
  }
}

TEST_F(CapiKnnMisc, NoBaseVectorsGivesPadding) {
  QV_ASSERT_OK(Knn(ctx_.get(), QV_METRIC_INNER_PRODUCT, dim_, 0, base_.data(), nq_, q_.data(), k_,
                   d_.data(), ids_.data()));
  for (size_t i = 0; i < ids_.size(); ++i) {
    EXPECT_EQ(ids_[i], -1);
    EXPECT_EQ(d_[i], -std::numeric_limits<float>::infinity());
  }
}

TEST_F(CapiKnnMisc, NoQueriesIsOk) {
  d_.assign(1, 5.0f);
  ids_.assign(1, 5);
  QV_ASSERT_OK(Knn(ctx_.get(), QV_METRIC_L2, dim_, n_, base_.data(), 0, q_.data(), k_, d_.data(),
                   ids_.data()));
  EXPECT_EQ(ids_[0], 5);
}

TEST_F(CapiKnnMisc, BadArguments) {
  qv_context_t* c = ctx_.get();
  const float* b = base_.data();
  const float* q = q_.data();
  float* d = d_.data();
  int64_t* i = ids_.data();
  const qv_metric_t L2 = QV_METRIC_L2;
  EXPECT_TRUE(FailsNaming(Knn(nullptr, L2, dim_, n_, b, nq_, q, k_, d, i), QV_ERR_INVALID_ARGUMENT,
                          "context"));
  EXPECT_TRUE(
      FailsNaming(Knn(c, 7, dim_, n_, b, nq_, q, k_, d, i), QV_ERR_INVALID_ARGUMENT, "metric"));
  EXPECT_TRUE(
      FailsNaming(Knn(c, -1, dim_, n_, b, nq_, q, k_, d, i), QV_ERR_INVALID_ARGUMENT, "metric"));
  EXPECT_TRUE(FailsNaming(Knn(c, L2, 0, n_, b, nq_, q, k_, d, i), QV_ERR_INVALID_ARGUMENT, "dim"));
  EXPECT_TRUE(FailsNaming(Knn(c, L2, -3, n_, b, nq_, q, k_, d, i), QV_ERR_INVALID_ARGUMENT, "dim"));
  EXPECT_TRUE(
      FailsNaming(Knn(c, L2, 65537, n_, b, nq_, q, k_, d, i), QV_ERR_INVALID_ARGUMENT, "dim"));
  EXPECT_TRUE(FailsNaming(Knn(c, L2, dim_, -1, b, nq_, q, k_, d, i), QV_ERR_INVALID_ARGUMENT, "n"));
  EXPECT_TRUE(FailsNaming(Knn(c, L2, dim_, n_, nullptr, nq_, q, k_, d, i), QV_ERR_INVALID_ARGUMENT,
                          "base"));
  EXPECT_TRUE(FailsNaming(Knn(c, L2, dim_, n_, b, -1, q, k_, d, i), QV_ERR_INVALID_ARGUMENT, "nq"));
  EXPECT_TRUE(FailsNaming(Knn(c, L2, dim_, n_, b, nq_, nullptr, k_, d, i), QV_ERR_INVALID_ARGUMENT,
                          "queries"));
  EXPECT_TRUE(FailsNaming(Knn(c, L2, dim_, n_, b, nq_, q, 0, d, i), QV_ERR_INVALID_ARGUMENT, "k"));
  EXPECT_TRUE(FailsNaming(Knn(c, L2, dim_, n_, b, nq_, q, QV_MAX_K + 1, d, i),
                          QV_ERR_INVALID_ARGUMENT, "k"));
  EXPECT_TRUE(FailsNaming(Knn(c, L2, dim_, n_, b, nq_, q, k_, nullptr, i), QV_ERR_INVALID_ARGUMENT,
                          "distances"));
  EXPECT_TRUE(
      FailsNaming(Knn(c, L2, dim_, n_, b, nq_, q, k_, d, nullptr), QV_ERR_INVALID_ARGUMENT, "ids"));

  std::vector<float> bad_base = base_;
  bad_base[3 * dim_ + 1] = std::nanf("");
  EXPECT_TRUE(FailsNaming(Knn(c, L2, dim_, n_, bad_base.data(), nq_, q, k_, d, i),
                          QV_ERR_INVALID_ARGUMENT, "base"));
  bad_base[3 * dim_ + 1] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(FailsNaming(Knn(c, L2, dim_, n_, bad_base.data(), nq_, q, k_, d, i),
                          QV_ERR_INVALID_ARGUMENT, "base"));
  std::vector<float> bad_q = q_;
  bad_q[dim_] = -std::numeric_limits<float>::infinity();
  EXPECT_TRUE(FailsNaming(Knn(c, L2, dim_, n_, b, nq_, bad_q.data(), k_, d, i),
                          QV_ERR_INVALID_ARGUMENT, "queries"));
  bad_q[dim_] = std::nanf("");
  EXPECT_TRUE(FailsNaming(Knn(c, L2, dim_, n_, b, nq_, bad_q.data(), k_, d, i),
                          QV_ERR_INVALID_ARGUMENT, "queries"));

  // Cosine rejects zero vectors, in the base and in the queries.
  std::vector<float> zero_base = base_;
  std::fill(zero_base.begin() + 2 * dim_, zero_base.begin() + 3 * dim_, 0.0f);
  EXPECT_TRUE(FailsNaming(Knn(c, QV_METRIC_COSINE, dim_, n_, zero_base.data(), nq_, q, k_, d, i),
                          QV_ERR_INVALID_ARGUMENT, "base"));
  std::vector<float> zero_q = q_;
  std::fill(zero_q.begin(), zero_q.begin() + dim_, 0.0f);
  EXPECT_TRUE(FailsNaming(Knn(c, QV_METRIC_COSINE, dim_, n_, b, nq_, zero_q.data(), k_, d, i),
                          QV_ERR_INVALID_ARGUMENT, "queries"));
}

}  // namespace
