// qv_index_remove: counts, absent ids ignored, removed ids gone from every search, re-adding works.
#include <algorithm>
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

class CapiRemove : public ::testing::TestWithParam<qv_metric_t> {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext(2);
    ASSERT_TRUE(ctx_) << qv_last_error_message();
    idx_ = MakeIndex(ctx_.get(), dim_, GetParam());
    ASSERT_TRUE(idx_);
    x_ = RandomVectors(n_, dim_, 301);
    ids_ = Iota(n_);
    QV_ASSERT_OK(qv_index_add(idx_.get(), n_, x_.data(), nullptr));
    q_ = RandomVectors(6, dim_, 302);
    q_.insert(q_.end(), x_.begin() + 3 * dim_, x_.begin() + 4 * dim_);  // equals removed id 3
  }

  // Drops ids from the reference (base vectors and ids).
  void RemoveFromReference(const std::vector<int64_t>& gone) {
    std::vector<float> x;
    std::vector<int64_t> ids;
    for (size_t i = 0; i < ids_.size(); ++i) {
      if (std::find(gone.begin(), gone.end(), ids_[i]) != gone.end()) continue;
      ids.push_back(ids_[i]);
      x.insert(x.end(), x_.begin() + i * dim_, x_.begin() + (i + 1) * dim_);
    }
    x_ = x;
    ids_ = ids;
  }

  ::testing::AssertionResult MatchesReference(uint32_t k) {
    Results r;
    qv_status_t s = Search(idx_.get(), q_, dim_, k, nullptr, &r);
    if (s != QV_OK) return ::testing::AssertionFailure() << Describe(s);
    return CheckKnn(GetParam(), x_, ids_, dim_, q_, k, r.distances, r.ids);
  }

  const int64_t dim_ = 9, n_ = 100;
  Context ctx_;
  Index idx_;
  std::vector<float> x_, q_;
  std::vector<int64_t> ids_;
};

TEST_P(CapiRemove, RemovesAndCounts) {
  std::vector<int64_t> gone = {3, 5, 7, 1000, 99, 12345678901LL};
  int64_t removed = -1;
  QV_ASSERT_OK(
      qv_index_remove(idx_.get(), static_cast<int64_t>(gone.size()), gone.data(), &removed));
  EXPECT_EQ(removed, 4);
  EXPECT_EQ(Count(idx_.get()), n_ - 4);
  RemoveFromReference(gone);
  for (uint32_t k : {1u, 10u, 96u, 100u}) EXPECT_TRUE(MatchesReference(k)) << "k " << k;

  // Removed ids never come back, in k-NN or range search.
  Results r;
  QV_ASSERT_OK(Search(idx_.get(), q_, dim_, 100, nullptr, &r));
  for (int64_t id : r.ids)
    for (int64_t g : gone) EXPECT_NE(id, g);
  qv_range_result_t* raw = nullptr;
  const float everything = GetParam() == QV_METRIC_L2 ? 1e30f : -1e30f;
  QV_ASSERT_OK(qv_index_range_search(idx_.get(), 7, q_.data(), everything, nullptr, &raw));
  RangeResult rr(raw);
  const int64_t* lims = nullptr;
  const int64_t* rids = nullptr;
  QV_ASSERT_OK(qv_range_result_get(rr.get(), nullptr, &lims, &rids, nullptr));
  EXPECT_EQ(lims[7], 7 * (n_ - 4));
  for (int64_t e = 0; e < lims[7]; ++e)
    for (int64_t g : gone) EXPECT_NE(rids[e], g);

  // Removing them again removes nothing.
  QV_ASSERT_OK(
      qv_index_remove(idx_.get(), static_cast<int64_t>(gone.size()), gone.data(), &removed));
  EXPECT_EQ(removed, 0);
  EXPECT_EQ(Count(idx_.get()), n_ - 4);
}

TEST_P(CapiRemove, RepeatedIdInOneCallCountsOnce) {
  std::vector<int64_t> gone = {9, 9, 9};
  int64_t removed = -1;
  QV_ASSERT_OK(qv_index_remove(idx_.get(), 3, gone.data(), &removed));
  EXPECT_EQ(removed, 1);
  EXPECT_EQ(Count(idx_.get()), n_ - 1);
  RemoveFromReference(gone);
  EXPECT_TRUE(MatchesReference(20));
}

TEST_P(CapiRemove, NullRemovedAndNoIds) {
  int64_t one = 10;
  QV_ASSERT_OK(qv_index_remove(idx_.get(), 1, &one, nullptr));
  EXPECT_EQ(Count(idx_.get()), n_ - 1);
  int64_t removed = -1;
  QV_ASSERT_OK(qv_index_remove(idx_.get(), 0, &one, &removed));
  EXPECT_EQ(removed, 0);
  EXPECT_EQ(Count(idx_.get()), n_ - 1);
}

TEST_P(CapiRemove, ReAddRemovedId) {
  std::vector<int64_t> gone = {3};
  int64_t removed = -1;
  QV_ASSERT_OK(qv_index_remove(idx_.get(), 1, gone.data(), &removed));
  ASSERT_EQ(removed, 1);
  RemoveFromReference(gone);

  // Id 3 again, with a different vector.
  std::vector<float> v = RandomVectors(1, dim_, 303);
  QV_ASSERT_OK(qv_index_add(idx_.get(), 1, v.data(), gone.data()));
  EXPECT_EQ(Count(idx_.get()), n_);
  x_.insert(x_.end(), v.begin(), v.end());
  ids_.push_back(3);
  for (uint32_t k : {1u, 10u, 100u}) EXPECT_TRUE(MatchesReference(k)) << "k " << k;

  if (GetParam() != QV_METRIC_INNER_PRODUCT) {
    float d;
    int64_t id = -5;
    QV_ASSERT_OK(qv_index_search(idx_.get(), 1, v.data(), 1, nullptr, &d, &id));
    EXPECT_EQ(id, 3);
  }
}

TEST_P(CapiRemove, NullIdsNumberAfterLargestRemaining) {
  std::vector<int64_t> gone = {3, 50};
  QV_ASSERT_OK(qv_index_remove(idx_.get(), 2, gone.data(), nullptr));
  std::vector<float> v = RandomVectors(2, dim_, 304);
  QV_ASSERT_OK(qv_index_add(idx_.get(), 2, v.data(), nullptr));
  RemoveFromReference(gone);
  x_.insert(x_.end(), v.begin(), v.end());
  ids_.push_back(100);
  ids_.push_back(101);
  EXPECT_TRUE(MatchesReference(110));
}

TEST_P(CapiRemove, RemoveEverything) {
  int64_t removed = -1;
  QV_ASSERT_OK(qv_index_remove(idx_.get(), n_, ids_.data(), &removed));
  EXPECT_EQ(removed, n_);
  EXPECT_EQ(Count(idx_.get()), 0);
  Results r;
  QV_ASSERT_OK(Search(idx_.get(), q_, dim_, 5, nullptr, &r));
  for (size_t i = 0; i < r.ids.size(); ++i) {
    EXPECT_EQ(r.ids[i], -1);
    EXPECT_EQ(r.distances[i], MissingDistance(GetParam()));
  }
  // And the index is usable again.
  QV_ASSERT_OK(qv_index_add(idx_.get(), n_, x_.data(), ids_.data()));
  EXPECT_TRUE(MatchesReference(10));
}

TEST_P(CapiRemove, SurvivesSaveAndLoad) {
  std::vector<int64_t> gone = {0, 1, 2, 40, 41};
  QV_ASSERT_OK(qv_index_remove(idx_.get(), 5, gone.data(), nullptr));
  RemoveFromReference(gone);
  void* data = nullptr;
  size_t size = 0;
  QV_ASSERT_OK(qv_index_save_buffer(idx_.get(), &data, &size));
  Buffer buf(data);
  qv_index_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_load_buffer(ctx_.get(), data, size, &raw));
  idx_.reset(raw);
  EXPECT_EQ(Count(idx_.get()), n_ - 5);
  EXPECT_TRUE(MatchesReference(100));
}

INSTANTIATE_TEST_SUITE_P(Metrics, CapiRemove,
                         ::testing::Values(QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE),
                         [](const ::testing::TestParamInfo<qv_metric_t>& info) {
                           return std::string(MetricName(info.param));
                         });

}  // namespace
