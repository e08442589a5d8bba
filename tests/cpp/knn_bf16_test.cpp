// The certified bfloat16 path returns what the fp32 engine returns: same ids (up to exact ties) and
// the same exact distances, including when its bounds are too loose to prune and it falls back.
#include <gtest/gtest.h>

#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/exact/knn.h"
#include "cpp/exact/knn_bf16.h"
#include "reference.h"

namespace quiver {
namespace {

struct Data {
  std::vector<float> base, norms, queries;
  Database db;
};

Data make(int64_t n, int64_t nq, int64_t dim, Metric metric, float offset, float scale) {
  Data d;
  d.base = testing::random_vectors(n, dim, 5, scale);
  d.queries = testing::random_vectors(nq, dim, 6, scale);
  for (auto& v : d.base) v += offset;
  for (auto& v : d.queries) v += offset;
  if (metric == Metric::cosine) {
    normalize_rows(d.base.data(), n, dim, d.base.data());
    normalize_rows(d.queries.data(), nq, dim, d.queries.data());
  }
  d.norms.resize(n);
  for (int64_t i = 0; i < n; ++i) d.norms[i] = squared_norm(&d.base[i * dim], dim);
  d.db = Database{d.base.data(), d.norms.data(), n, dim, nullptr, metric};
  return d;
}

void expect_same_as_fp32(const Data& d, int64_t nq, int64_t k, const IdFilter& filter = IdFilter{}) {
  ThreadPool pool(2);
  std::vector<float> d32(nq * k), d16(nq * k);
  std::vector<int64_t> i32(nq * k), i16(nq * k);
  exact_knn(pool, d.db, Queries{d.queries.data(), nq}, k, filter, d32.data(), i32.data());
  exact_knn_bf16(pool, d.db, make_bf16_database(d.db), Queries{d.queries.data(), nq}, k, filter,
                 d16.data(), i16.data());
  for (int64_t i = 0; i < nq * k; ++i) {
    EXPECT_EQ(d16[i], d32[i]) << "entry " << i;
    if (d16[i] == d32[i] && (i % k + 1 == k || d32[i] != d32[i + 1])) EXPECT_EQ(i16[i], i32[i]) << "entry " << i;
  }
}

class KnnBf16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!bf16_gemm_available()) GTEST_SKIP() << "this processor has no AVX-512 BF16";
  }
};

TEST_F(KnnBf16, SameAsFp32OnAwkwardSizes) {
  for (Metric metric : {Metric::l2, Metric::inner_product, Metric::cosine})
    for (auto [n, dim, nq, k] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{5000, 17, 70, 10},
                                 {4097, 100, 129, 1}, {6000, 33, 300, 100}, {4500, 64, 65, 2048}}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " n=" << n << " dim=" << dim << " k=" << k);
      expect_same_as_fp32(make(n, nq, dim, metric, 0.0f, 1.0f), nq, k);
    }
}

TEST_F(KnnBf16, IntegerPixelsLikeImages) {
  Data d = make(5000, 80, 49, Metric::l2, 128.0f, 127.0f);
  for (auto& v : d.base) v = std::floor(v);
  for (auto& v : d.queries) v = std::floor(v);
  for (int64_t i = 0; i < 5000; ++i) d.norms[i] = squared_norm(&d.base[i * 49], 49);
  expect_same_as_fp32(d, 80, 10);
}

TEST_F(KnnBf16, LooseBoundsStillExact) {
  // Huge common offset, tiny differences: bfloat16 rounding swamps the distances, so every row stays
  // a candidate (one chunk with 600 queries: the candidate cap trips and the query is answered from
  // all rows; 70 queries: four chunks below the cap). Either way the answer is the float64 one,
  // which the fp32 GEMM form cannot resolve here.
  for (int64_t nq : {600, 70}) {
    Data d = make(5000, nq, 32, Metric::l2, 1000.0f, 0.001f);
    ThreadPool pool(2);
    std::vector<float> distances(nq * 10);
    std::vector<int64_t> ids(nq * 10);
    exact_knn_bf16(pool, d.db, make_bf16_database(d.db), Queries{d.queries.data(), nq}, 10, IdFilter{},
                   distances.data(), ids.data());
    for (int64_t q = 0; q < nq; ++q) {
      auto ref = testing::reference_ranking(true, &d.queries[q * 32], d.base.data(), 5000, 32);
      for (int64_t i = 0; i < 10; ++i) EXPECT_NEAR(distances[q * 10 + i], ref[i].first, 2e-6) << q;
    }
  }
}

TEST_F(KnnBf16, FilterApplies) {
  Data d = make(5000, 70, 24, Metric::l2, 0.0f, 1.0f);
  std::vector<uint8_t> bits(5000 / 8 + 1, 0);
  for (int64_t id = 0; id < 5000; id += 3) bits[id / 8] |= uint8_t(1u << (id % 8));
  expect_same_as_fp32(d, 70, 20, IdFilter{bits.data(), 5000});
}

}  // namespace
}  // namespace quiver
