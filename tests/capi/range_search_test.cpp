// Range search: the CSR result (lims, ids, distances) against a float64 reference, closest first,
// with filters, radii that catch nothing or everything, and the result accessors.
#include <set>
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

// Whether a reference value is within radius (L2: <=, similarities: >=), with a margin of tol:
// +1 inside by more than tol, -1 outside by more than tol, 0 too close to call.
int Inside(qv_metric_t metric, double value, float radius, double tol) {
  double margin = LargerIsCloser(metric) ? value - radius : radius - value;
  if (margin > tol) return 1;
  if (margin < -tol) return -1;
  return 0;
}

template <typename Allowed>
::testing::AssertionResult CheckRange(qv_metric_t metric, const std::vector<float>& base,
                                      const std::vector<int64_t>& ids, int64_t dim,
                                      const std::vector<float>& queries, float radius,
                                      const qv_range_result_t* result, Allowed allowed) {
  const int64_t nq = static_cast<int64_t>(queries.size()) / dim;
  const int64_t n = static_cast<int64_t>(ids.size());
  int64_t got_nq = -1;
  const int64_t* lims = nullptr;
  const int64_t* rids = nullptr;
  const float* rdist = nullptr;
  if (qv_range_result_get(result, &got_nq, &lims, &rids, &rdist) != QV_OK)
    return ::testing::AssertionFailure() << "qv_range_result_get: " << qv_last_error_message();
  if (got_nq != nq) return ::testing::AssertionFailure() << "nq " << got_nq << " != " << nq;
  if (lims == nullptr) return ::testing::AssertionFailure() << "lims is NULL";
  if (lims[0] != 0) return ::testing::AssertionFailure() << "lims[0] = " << lims[0];
  if (lims[nq] > 0 && (rids == nullptr || rdist == nullptr))
    return ::testing::AssertionFailure() << "hits but NULL ids or distances";
  for (int64_t qi = 0; qi < nq; ++qi) {
    if (lims[qi + 1] < lims[qi]) return ::testing::AssertionFailure() << "lims decreases at " << qi;
    const float* q = &queries[qi * dim];
    const double tol = Tolerance(metric, q, base, n, dim);
    std::vector<Hit> ranked = RankAll(metric, q, base, ids, dim, allowed);
    std::set<int64_t> returned;
    for (int64_t e = lims[qi]; e < lims[qi + 1]; ++e) {
      const int64_t id = rids[e];
      if (!returned.insert(id).second)
        return ::testing::AssertionFailure() << "query " << qi << ": id " << id << " repeated";
      const Hit* h = nullptr;
      for (const Hit& c : ranked)
        if (c.id == id) h = &c;
      if (h == nullptr)
        return ::testing::AssertionFailure()
               << "query " << qi << ": id " << id << " is not an allowed id of the index";
      if (Inside(metric, h->distance, radius, tol) < 0)
        return ::testing::AssertionFailure() << "query " << qi << ": id " << id << " at "
                                             << h->distance << " is outside radius " << radius;
      if (std::abs(rdist[e] - h->distance) > tol)
        return ::testing::AssertionFailure() << "query " << qi << ": id " << id << " distance "
                                             << rdist[e] << ", reference " << h->distance;
      if (e > lims[qi]) {
        bool ordered = LargerIsCloser(metric) ? rdist[e] <= rdist[e - 1] : rdist[e] >= rdist[e - 1];
        if (!ordered)
          return ::testing::AssertionFailure()
                 << "query " << qi << ": not closest first at entry " << e - lims[qi] << " ("
                 << rdist[e - 1] << " then " << rdist[e] << ")";
      }
    }
    for (const Hit& h : ranked)
      if (Inside(metric, h.distance, radius, tol) > 0 && !returned.count(h.id))
        return ::testing::AssertionFailure()
               << "query " << qi << ": id " << h.id << " at " << h.distance << " within radius "
               << radius << " is missing";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult CheckRange(qv_metric_t metric, const std::vector<float>& base,
                                      const std::vector<int64_t>& ids, int64_t dim,
                                      const std::vector<float>& queries, float radius,
                                      const qv_range_result_t* result) {
  return CheckRange(metric, base, ids, dim, queries, radius, result, [](int64_t) { return true; });
}

// A radius that the reference's 10th-closest of the median query reaches: some queries catch more,
// some fewer.
float TypicalRadius(qv_metric_t metric, const std::vector<float>& base, int64_t dim,
                    const std::vector<float>& queries) {
  const int64_t nq = static_cast<int64_t>(queries.size()) / dim;
  const int64_t n = static_cast<int64_t>(base.size()) / dim;
  std::vector<double> tenth;
  for (int64_t qi = 0; qi < nq; ++qi) {
    std::vector<Hit> ranked = RankAll(metric, &queries[qi * dim], base, Iota(n), dim);
    tenth.push_back(ranked[std::min<size_t>(9, ranked.size() - 1)].distance);
  }
  std::sort(tenth.begin(), tenth.end());
  return static_cast<float>(tenth[tenth.size() / 2]);
}

class CapiRangeSearch : public ::testing::TestWithParam<qv_metric_t> {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext(2);
    ASSERT_TRUE(ctx_) << qv_last_error_message();
  }
  Context ctx_;
};

TEST_P(CapiRangeSearch, MatchesBruteForce) {
  const qv_metric_t metric = GetParam();
  for (int64_t dim : {3, 17, 100}) {
    const int64_t n = 500;
    std::vector<float> x = RandomVectors(n, dim, 201 + dim);
    std::vector<int64_t> ids(n);
    for (int64_t i = 0; i < n; ++i) ids[i] = 5 * i + 3;
    std::vector<float> q = RandomVectors(20, dim, 202 + dim);
    q.insert(q.end(), x.begin(), x.begin() + 2 * dim);  // two queries equal to base vectors
    Index idx = MakeIndex(ctx_.get(), dim, metric);
    ASSERT_TRUE(idx);
    QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), ids.data()));
    const float radius = TypicalRadius(metric, x, dim, q);
    qv_range_result_t* raw = nullptr;
    QV_ASSERT_OK(qv_index_range_search(idx.get(), 22, q.data(), radius, nullptr, &raw));
    RangeResult r(raw);
    ASSERT_NE(raw, nullptr);
    EXPECT_TRUE(CheckRange(metric, x, ids, dim, q, radius, r.get()))
        << MetricName(metric) << " dim " << dim;
  }
}

TEST_P(CapiRangeSearch, RadiusThatCatchesNothing) {
  // Base vectors in [-2, -1]^d, queries in [1, 2]^d: L2 >= 4d, inner product and cosine < 0.
  const qv_metric_t metric = GetParam();
  const int64_t dim = 8, n = 100, nq = 5;
  std::vector<float> x = RandomVectors(n, dim, 211), q = RandomVectors(nq, dim, 212);
  for (float& v : x) v = -1.5f - 0.5f * std::abs(v) / 2.0f;
  for (float& v : q) v = 1.5f + 0.5f * std::abs(v) / 2.0f;
  Index idx = MakeIndex(ctx_.get(), dim, metric);
  ASSERT_TRUE(idx);
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
  const float radius = metric == QV_METRIC_L2 ? 1.0f : 0.0f;
  qv_range_result_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_range_search(idx.get(), nq, q.data(), radius, nullptr, &raw));
  RangeResult r(raw);
  int64_t got_nq = -1;
  const int64_t* lims = nullptr;
  QV_ASSERT_OK(qv_range_result_get(r.get(), &got_nq, &lims, nullptr, nullptr));
  ASSERT_EQ(got_nq, nq);
  ASSERT_NE(lims, nullptr);
  for (int64_t i = 0; i <= nq; ++i) EXPECT_EQ(lims[i], 0) << i;
}

TEST_P(CapiRangeSearch, RadiusThatCatchesEverything) {
  const qv_metric_t metric = GetParam();
  const int64_t dim = 6, n = 120, nq = 4;
  std::vector<float> x = RandomVectors(n, dim, 221), q = RandomVectors(nq, dim, 222);
  Index idx = MakeIndex(ctx_.get(), dim, metric);
  ASSERT_TRUE(idx);
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
  const float radius =
      metric == QV_METRIC_L2 ? 1e30f : (metric == QV_METRIC_COSINE ? -1.5f : -1e30f);
  qv_range_result_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_range_search(idx.get(), nq, q.data(), radius, nullptr, &raw));
  RangeResult r(raw);
  const int64_t* lims = nullptr;
  QV_ASSERT_OK(qv_range_result_get(r.get(), nullptr, &lims, nullptr, nullptr));
  for (int64_t i = 0; i <= nq; ++i) EXPECT_EQ(lims[i], i * n) << i;
  EXPECT_TRUE(CheckRange(metric, x, Iota(n), dim, q, radius, r.get()));

  // An infinite radius is not NaN: it is valid and catches everything too.
  const float infinite = LargerIsCloser(metric) ? -std::numeric_limits<float>::infinity()
                                                : std::numeric_limits<float>::infinity();
  QV_ASSERT_OK(qv_index_range_search(idx.get(), nq, q.data(), infinite, nullptr, &raw));
  r.reset(raw);
  QV_ASSERT_OK(qv_range_result_get(r.get(), nullptr, &lims, nullptr, nullptr));
  EXPECT_EQ(lims[nq], nq * n);
}

TEST_P(CapiRangeSearch, WithFilter) {
  const qv_metric_t metric = GetParam();
  const int64_t dim = 10, n = 400;
  std::vector<float> x = RandomVectors(n, dim, 231), q = RandomVectors(15, dim, 232);
  Index idx = MakeIndex(ctx_.get(), dim, metric);
  ASSERT_TRUE(idx);
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
  const int64_t bits = 350;
  std::vector<uint8_t> filter((bits + 7) / 8, 0);
  for (int64_t i = 0; i < bits; ++i)
    if (i % 3 != 1) filter[i / 8] |= uint8_t(1u << (i % 8));
  auto allowed = [&](int64_t id) { return id < bits && id % 3 != 1; };
  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  p.filter = filter.data();
  p.filter_bits = bits;
  const float radius = TypicalRadius(metric, x, dim, q);
  qv_range_result_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_range_search(idx.get(), 15, q.data(), radius, &p, &raw));
  RangeResult r(raw);
  EXPECT_TRUE(CheckRange(metric, x, Iota(n), dim, q, radius, r.get(), allowed));
}

INSTANTIATE_TEST_SUITE_P(Metrics, CapiRangeSearch,
                         ::testing::Values(QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE),
                         [](const ::testing::TestParamInfo<qv_metric_t>& info) {
                           return std::string(MetricName(info.param));
                         });

class CapiRangeResult : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext(2);
    ASSERT_TRUE(ctx_);
    idx_ = MakeIndex(ctx_.get(), dim_, QV_METRIC_L2);
    ASSERT_TRUE(idx_);
    x_ = RandomVectors(50, dim_, 241);
    QV_ASSERT_OK(qv_index_add(idx_.get(), 50, x_.data(), nullptr));
  }
  const int64_t dim_ = 4;
  Context ctx_;
  Index idx_;
  std::vector<float> x_;
};

TEST_F(CapiRangeResult, GetWithNullOutputs) {
  qv_range_result_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_range_search(idx_.get(), 3, x_.data(), 0.5f, nullptr, &raw));
  RangeResult r(raw);
  QV_EXPECT_OK(qv_range_result_get(r.get(), nullptr, nullptr, nullptr, nullptr));
  int64_t nq = -1;
  QV_EXPECT_OK(qv_range_result_get(r.get(), &nq, nullptr, nullptr, nullptr));
  EXPECT_EQ(nq, 3);
  const int64_t* lims = nullptr;
  const float* d = nullptr;
  QV_EXPECT_OK(qv_range_result_get(r.get(), nullptr, &lims, nullptr, &d));
  ASSERT_NE(lims, nullptr);
  EXPECT_EQ(lims[0], 0);
  // Every query is a base vector, so each catches at least itself.
  for (int i = 0; i < 3; ++i) EXPECT_GT(lims[i + 1], lims[i]);
  const int64_t* ids = nullptr;
  QV_EXPECT_OK(qv_range_result_get(r.get(), nullptr, nullptr, &ids, nullptr));
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(ids[lims[0]], 0);
  EXPECT_EQ(ids[lims[1]], 1);
  EXPECT_EQ(ids[lims[2]], 2);
  // The views are stable: a second get gives the same pointers.
  const int64_t* lims2 = nullptr;
  QV_EXPECT_OK(qv_range_result_get(r.get(), nullptr, &lims2, nullptr, nullptr));
  EXPECT_EQ(lims2, lims);
}

TEST_F(CapiRangeResult, GetNullResultIsInvalid) {
  int64_t nq;
  EXPECT_TRUE(FailsNaming(qv_range_result_get(nullptr, &nq, nullptr, nullptr, nullptr),
                          QV_ERR_INVALID_ARGUMENT, "result"));
}

TEST_F(CapiRangeResult, FreeNullIsNoOp) {
  qv_range_result_free(nullptr);
  SUCCEED();
}

TEST_F(CapiRangeResult, NoQueries) {
  qv_range_result_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_range_search(idx_.get(), 0, x_.data(), 1.0f, nullptr, &raw));
  RangeResult r(raw);
  ASSERT_NE(raw, nullptr);
  int64_t nq = -1;
  const int64_t* lims = nullptr;
  QV_ASSERT_OK(qv_range_result_get(r.get(), &nq, &lims, nullptr, nullptr));
  EXPECT_EQ(nq, 0);
  ASSERT_NE(lims, nullptr);
  EXPECT_EQ(lims[0], 0);
}

TEST_F(CapiRangeResult, EmptyIndex) {
  Index empty = MakeIndex(ctx_.get(), dim_, QV_METRIC_INNER_PRODUCT);
  ASSERT_TRUE(empty);
  qv_range_result_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_range_search(empty.get(), 2, x_.data(), -1e30f, nullptr, &raw));
  RangeResult r(raw);
  const int64_t* lims = nullptr;
  QV_ASSERT_OK(qv_range_result_get(r.get(), nullptr, &lims, nullptr, nullptr));
  EXPECT_EQ(lims[0], 0);
  EXPECT_EQ(lims[1], 0);
  EXPECT_EQ(lims[2], 0);
}

TEST_F(CapiRangeResult, ResultOutlivesIndex) {
  // The result owns its memory: it stays readable after the index is freed.
  qv_range_result_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_range_search(idx_.get(), 2, x_.data(), 1e30f, nullptr, &raw));
  RangeResult r(raw);
  idx_.reset();
  const int64_t* lims = nullptr;
  const int64_t* ids = nullptr;
  QV_ASSERT_OK(qv_range_result_get(r.get(), nullptr, &lims, &ids, nullptr));
  EXPECT_EQ(lims[2], 100);
  std::vector<int64_t> first(ids, ids + 50);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, Iota(50));
}

}  // namespace
