// Search with an allowed-ids bitset: only allowed ids come back, ids at or past filter_bits never
// do, an empty filter gives only padding.
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

// A bitset of `bits` bits with about `fraction` of them set, and every bit of the last byte past
// `bits` set too (the library must ignore those).
std::vector<uint8_t> RandomBitset(int64_t bits, double fraction, uint64_t seed) {
  std::vector<uint8_t> b(static_cast<size_t>((bits + 7) / 8), 0);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t i = 0; i < bits; ++i)
    if (u(rng) < fraction) b[i / 8] |= uint8_t(1u << (i % 8));
  for (int64_t i = bits; i < static_cast<int64_t>(b.size()) * 8; ++i)
    b[i / 8] |= uint8_t(1u << (i % 8));
  return b;
}

bool BitSet(const std::vector<uint8_t>& b, int64_t bits, int64_t id) {
  return id >= 0 && id < bits && (b[id / 8] >> (id % 8)) & 1;
}

class CapiFilter : public ::testing::TestWithParam<qv_metric_t> {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext(2);
    ASSERT_TRUE(ctx_) << qv_last_error_message();
  }
  Context ctx_;
};

TEST_P(CapiFilter, OnlyAllowedIds) {
  const qv_metric_t metric = GetParam();
  const int64_t dim = 13, n = 700;
  std::vector<float> x = RandomVectors(n, dim, 101);
  Index idx = MakeIndex(ctx_.get(), dim, metric);
  ASSERT_TRUE(idx);
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
  std::vector<float> q = RandomVectors(9, dim, 102);

  // filter_bits stops short of the last ids (and not on a byte boundary) so they are excluded.
  const int64_t bits = n - 13;
  std::vector<uint8_t> filter = RandomBitset(bits, 0.3, 103);
  auto allowed = [&](int64_t id) { return BitSet(filter, bits, id); };
  int64_t allowed_count = 0;
  for (int64_t i = 0; i < n; ++i) allowed_count += allowed(i);

  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  p.filter = filter.data();
  p.filter_bits = bits;
  for (uint32_t k : {1u, 10u, 100u, static_cast<uint32_t>(allowed_count), 500u}) {
    Results r;
    QV_ASSERT_OK(Search(idx.get(), q, dim, k, &p, &r));
    EXPECT_TRUE(CheckKnn(metric, x, Iota(n), dim, q, k, r.distances, r.ids, allowed));
    for (int64_t id : r.ids) EXPECT_TRUE(id == -1 || allowed(id)) << id;
  }
}

TEST_P(CapiFilter, LargeIdsBeyondFilterBitsAreExcluded) {
  const qv_metric_t metric = GetParam();
  const int64_t dim = 7, n = 60;
  std::vector<float> x = RandomVectors(n, dim, 111);
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = (i % 2) ? (int64_t(1) << 40) + i : i;
  Index idx = MakeIndex(ctx_.get(), dim, metric);
  ASSERT_TRUE(idx);
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), ids.data()));

  // All bits set over 64 ids: every small id is allowed, every 1<<40 + i is past filter_bits.
  std::vector<uint8_t> filter(8, 0xFF);
  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  p.filter = filter.data();
  p.filter_bits = 64;
  std::vector<float> q = RandomVectors(5, dim, 112);
  Results r;
  QV_ASSERT_OK(Search(idx.get(), q, dim, 40, &p, &r));
  EXPECT_TRUE(
      CheckKnn(metric, x, ids, dim, q, 40, r.distances, r.ids, [](int64_t id) { return id < 64; }));
}

TEST_P(CapiFilter, EmptyFilterGivesOnlyPadding) {
  const qv_metric_t metric = GetParam();
  const int64_t dim = 5, n = 40;
  std::vector<float> x = RandomVectors(n, dim, 121);
  Index idx = MakeIndex(ctx_.get(), dim, metric);
  ASSERT_TRUE(idx);
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
  std::vector<float> q = RandomVectors(3, dim, 122);

  std::vector<uint8_t> zeros(8, 0x00), ones(8, 0xFF);
  struct {
    const uint8_t* filter;
    int64_t bits;
  } const cases[] = {{zeros.data(), 40}, {zeros.data(), 64}, {ones.data(), 0}};
  for (const auto& c : cases) {
    qv_search_params_t p;
    QV_ASSERT_OK(qv_search_params_init(&p));
    p.filter = c.filter;
    p.filter_bits = c.bits;
    Results r;
    QV_ASSERT_OK(Search(idx.get(), q, dim, 10, &p, &r));
    for (size_t i = 0; i < r.ids.size(); ++i) {
      EXPECT_EQ(r.ids[i], -1) << "filter_bits " << c.bits;
      EXPECT_EQ(r.distances[i], MissingDistance(metric));
    }
  }
}

TEST_P(CapiFilter, NullFilterAllowsEverything) {
  const qv_metric_t metric = GetParam();
  const int64_t dim = 5, n = 40;
  std::vector<float> x = RandomVectors(n, dim, 131);
  Index idx = MakeIndex(ctx_.get(), dim, metric);
  ASSERT_TRUE(idx);
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
  std::vector<float> q = RandomVectors(3, dim, 132);
  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  ASSERT_EQ(p.filter, nullptr);
  Results with, without;
  QV_ASSERT_OK(Search(idx.get(), q, dim, 40, &p, &with));
  QV_ASSERT_OK(Search(idx.get(), q, dim, 40, nullptr, &without));
  EXPECT_TRUE(with == without);

  // A NULL filter with a non-zero filter_bits: the header says NULL allows every id and does not
  // say whether filter_bits then matters, so either reading is accepted: every id allowed, or the
  // inconsistent pair rejected as an invalid argument that names the filter.
  p.filter_bits = 3;
  qv_status_t s = Search(idx.get(), q, dim, 40, &p, &with);
  if (s == QV_OK)
    EXPECT_TRUE(with == without);
  else
    EXPECT_TRUE(FailsNamingAny(s, QV_ERR_INVALID_ARGUMENT, {"filter", "filter_bits", "params"}));
}

TEST_P(CapiFilter, AppliesToKnnRowNumbers) {
  const qv_metric_t metric = GetParam();
  const int64_t dim = 11, n = 300, nq = 4;
  std::vector<float> x = RandomVectors(n, dim, 141);
  std::vector<float> q = RandomVectors(nq, dim, 142);
  const int64_t bits = 250;
  std::vector<uint8_t> filter = RandomBitset(bits, 0.2, 143);
  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  p.filter = filter.data();
  p.filter_bits = bits;
  const uint32_t k = 80;
  std::vector<float> d(nq * k);
  std::vector<int64_t> ids(nq * k);
  QV_ASSERT_OK(
      qv_knn(ctx_.get(), metric, dim, n, x.data(), nq, q.data(), k, &p, d.data(), ids.data()));
  EXPECT_TRUE(CheckKnn(metric, x, Iota(n), dim, q, k, d, ids,
                       [&](int64_t id) { return BitSet(filter, bits, id); }));
}

INSTANTIATE_TEST_SUITE_P(Metrics, CapiFilter,
                         ::testing::Values(QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE),
                         [](const ::testing::TestParamInfo<qv_metric_t>& info) {
                           return std::string(MetricName(info.param));
                         });

}  // namespace
