// gpu_ivf.h's IVF-PQ against a float64 reference of the same IVF semantics (ivf_testing.h): L2 and
// inner product, M not a multiple of 4, M a multiple of 16 (16-byte code loads) and M = 96 (tables
// above 48 KB of shared memory), rotation, few queries over long lists (chunked rows), encoding checked
// against the nearest sub-quantizer centroids, re-ranking against raw vectors, and float16 tables
// on data of large magnitude (raw 0..255 values): recall must rise with nprobe. M = 32 and 64 take
// the rotated scan (float tables for M = 32, 16-bit fixed-point ones with fp16/bf16), rows chunked too;
// 16-bit tables are checked against the reference within their rounding. k <= 128 selects inside
// the scan, larger k (2048 here) writes rows of distances for row_select.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "cpp/backend/gpu_ivf.h"
#include "gpu_testing.h"
#include "ivf_testing.h"

namespace quiver {
namespace {

using testing::HostIvfModel;

struct PqCase {
  int64_t n, dim, nlist, pq_m, nq, k, nprobe;
  Metric metric;
  bool rotated;
};

// Each entry's code picks, per sub-quantizer, a nearest centroid of its residual (up to near-ties).
void check_codes(const HostIvfModel& m, const testing::IndexContents& c, const std::vector<float>& data) {
  const int64_t dsub = m.dim / m.pq_m;
  for (size_t e = 0; e < c.ids.size(); ++e) {
    const auto xr = testing::rotate(m, &data[c.ids[e] * m.dim]);
    const int64_t l = c.lists[e];
    for (int64_t s = 0; s < m.pq_m; ++s) {
      double best = 1e300, chosen = 0;
      for (int64_t k = 0; k < 256; ++k) {
        double d = 0;
        for (int64_t t = 0; t < dsub; ++t) {
          const double r = xr[s * dsub + t] - m.centroids[l * m.dim + s * dsub + t];
          const double v = r - m.codebooks[(s * 256 + k) * dsub + t];
          d += v * v;
        }
        best = std::min(best, d);
        if (k == c.codes[e * m.pq_m + s]) chosen = d;
      }
      ASSERT_LE(chosen, best + 1e-4 * (1 + best)) << "entry " << e << " sub-quantizer " << s;
    }
  }
}

TEST(GpuIvfPq, MatchesReference) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const PqCase cases[] = {
      {2000, 32, 10, 8, 50, 10, 3, Metric::l2, false},
      {2000, 32, 10, 8, 1100, 10, 3, Metric::l2, false},  // more queries than one wave of blocks
      {2000, 32, 10, 4, 50, 10, 1, Metric::l2, false},
      {2000, 42, 7, 6, 40, 7, 2, Metric::l2, false},
      {2000, 42, 7, 6, 40, 1, 7, Metric::l2, false},
      {1500, 64, 9, 16, 30, 20, 4, Metric::inner_product, false},
      {1500, 64, 9, 32, 30, 20, 9, Metric::l2, false},
      {1000, 96, 5, 96, 20, 10, 2, Metric::l2, false},
      {1300, 128, 6, 64, 25, 10, 3, Metric::l2, false},
      {1300, 64, 6, 32, 25, 17, 3, Metric::inner_product, false},
      {6000, 64, 3, 32, 2, 50, 2, Metric::l2, false},
      {1200, 48, 6, 12, 20, 100, 3, Metric::l2, true},
      {1200, 48, 6, 12, 20, 10, 6, Metric::inner_product, true},
      {400, 20, 4, 5, 5, 2048, 4, Metric::l2, false},
      {6000, 24, 3, 8, 2, 50, 2, Metric::l2, false},
      {6000, 24, 3, 8, 2, 50, 2, Metric::inner_product, false},
  };
  uint32_t seed = 300;
  for (const PqCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << "n " << c.n << " dim " << c.dim << " nlist " << c.nlist << " M " << c.pq_m
                                      << " k " << c.k << " nprobe " << c.nprobe << " metric " << int(c.metric)
                                      << " rotated " << c.rotated);
    const auto data = testing::uniform_vectors(c.n, c.dim, seed);
    const auto queries = testing::uniform_vectors(c.nq, c.dim, seed + 1);
    const HostIvfModel model = testing::make_model(data, c.dim, c.nlist, c.pq_m, c.metric, c.rotated, seed);
    seed += 10;
    auto ivf = testing::filled_ivf(resources, model, data);
    EXPECT_EQ(gpu::ivf_code_bytes(*ivf), c.pq_m);
    check_codes(model, testing::read_contents(resources, *ivf, model), data);
    gpu::IvfSearchOptions options;
    options.nprobe = c.nprobe;
    const double tol = 5e-5 * double(c.dim) + 1e-4;
    const int64_t checked = testing::search_and_check(resources, *ivf, model, queries, c.k, options, tol);
    EXPECT_GE(checked, c.nq * 3 / 4);
  }
}

TEST(GpuIvfPq, RefineReranksWithExactDistances) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const int64_t n = 3000, dim = 40, nq = 40, k = 10;
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    const auto data = testing::uniform_vectors(n, dim, 41);
    const auto queries = testing::uniform_vectors(nq, dim, 42);
    HostIvfModel model = testing::make_model(data, dim, 8, 4, metric, true, 43);
    model.keep_raw = true;
    auto ivf = testing::filled_ivf(resources, model, data);
    gpu::IvfSearchOptions options;
    options.nprobe = 3;
    options.refine_k = 40;
    const int64_t checked = testing::search_and_check(resources, *ivf, model, queries, k, options, 1e-3);
    EXPECT_GE(checked, nq / 2);
  }
}

// fp16 / bf16 tables (16-bit fixed point for M = 64, float16 for M = 16, float for M = 32) against the
// reference, within the tables' rounding: the scan offsets each sub-quantizer by a bound of its
// entries and scales the widest bound to 65535 (fixed point) or 60000 (half). On data in [-1, 1]
// (residual codewords in [-2, 2]) a bound is at most 2 |alpha| sqrt(dsub) 4 sqrt(dsub) = 16 dsub, so
// the M look-ups of an estimate are off by at most 8 dim / 65535 (fixed point, half a step each) or
// 16 dim / 4096 (half: 2^-12 of 60000 each).
TEST(GpuIvfPq, SixteenBitTablesMatchReferenceWithinRounding) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  struct Case {
    int64_t n, dim, nlist, pq_m, nq, k, nprobe;
    Metric metric;
    ComputeMode mode;
  };
  const Case cases[] = {
      {1300, 64, 6, 64, 25, 10, 3, Metric::l2, ComputeMode::fp16},
      {1300, 64, 6, 64, 1100, 10, 3, Metric::l2, ComputeMode::fp16},
      {1300, 64, 6, 64, 25, 100, 3, Metric::inner_product, ComputeMode::bf16},
      {6000, 64, 3, 64, 2, 37, 2, Metric::l2, ComputeMode::fp16},  // few queries: chunked rows
      {1300, 64, 6, 16, 25, 10, 4, Metric::l2, ComputeMode::fp16},
      {1300, 64, 6, 16, 25, 64, 4, Metric::inner_product, ComputeMode::fp16},
      {1300, 64, 6, 32, 25, 10, 3, Metric::l2, ComputeMode::bf16},
  };
  uint32_t seed = 700;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "M " << c.pq_m << " k " << c.k << " nq " << c.nq << " metric "
                                      << int(c.metric) << " mode " << int(c.mode));
    const auto data = testing::uniform_vectors(c.n, c.dim, seed);
    const auto queries = testing::uniform_vectors(c.nq, c.dim, seed + 1);
    const HostIvfModel model = testing::make_model(data, c.dim, c.nlist, c.pq_m, c.metric, false, seed);
    seed += 10;
    auto ivf = testing::filled_ivf(resources, model, data);
    gpu::IvfSearchOptions options;
    options.nprobe = c.nprobe;
    options.mode = c.mode;
    double rounding = 0;
    if (c.pq_m == 64) rounding = 8.0 * double(c.dim) / 65535.0;
    if (c.pq_m == 16) rounding = 16.0 * double(c.dim) / 4096.0;
    const double tol = rounding + 5e-5 * double(c.dim) + 1e-4;
    const int64_t checked = testing::search_and_check(resources, *ivf, model, queries, c.k, options, tol);
    EXPECT_GE(checked, c.nq * 3 / 4);
  }
}

// Recall@10 against exact search, for the given table precision and nprobe.
double recall_at_10(gpu::Resources& resources, const gpu::IvfDevice& ivf, const std::vector<float>& queries,
                    const std::vector<std::set<int64_t>>& truth, int64_t nprobe, ComputeMode mode) {
  const int64_t nq = int64_t(truth.size()), k = 10;
  std::vector<float> dist(static_cast<size_t>(nq * k));
  std::vector<int64_t> ids(static_cast<size_t>(nq * k));
  gpu::IvfSearchOptions options;
  options.nprobe = nprobe;
  options.mode = mode;
  gpu::ivf_search(resources, ivf, nq, queries.data(), k, options, dist.data(), ids.data());
  int64_t hits = 0;
  for (int64_t q = 0; q < nq; ++q)
    for (int64_t r = 0; r < k; ++r) hits += truth[q].count(ids[q * k + r]);
  return double(hits) / double(nq * k);
}

TEST(GpuIvfPq, HalfTablesKeepRecallRisingOnLargeValues) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  // Raw 0..255 "pixels": distances reach millions, far beyond half's 65 504.
  const int64_t n = 4000, dim = 64, nq = 100, nlist = 16;
  auto pixels = [](int64_t rows, uint32_t seed) {
    auto x = testing::integer_vectors(rows, dim, seed, 128);
    for (auto& v : x) v += 127.f;
    return x;
  };
  const auto data = pixels(n, 51);
  const auto queries = pixels(nq, 52);
  std::vector<std::set<int64_t>> truth(static_cast<size_t>(nq));
  for (int64_t q = 0; q < nq; ++q) {
    std::vector<std::pair<double, int64_t>> all;
    for (int64_t i = 0; i < n; ++i)
      all.push_back({testing::exact_value(true, &queries[q * dim], &data[i * dim], dim), i});
    std::partial_sort(all.begin(), all.begin() + 10, all.end());
    for (int r = 0; r < 10; ++r) truth[q].insert(all[r].second);
  }
  for (int64_t m : {64, 32, 16, 8}) {
    SCOPED_TRACE(::testing::Message() << "M " << m);
    const HostIvfModel model = testing::make_model(data, dim, nlist, m, Metric::l2, false, 53);
    auto ivf = testing::filled_ivf(resources, model, data);
    double previous = 0;
    for (int64_t nprobe : {1, 2, 4, 8, 16}) {
      const double full = recall_at_10(resources, *ivf, queries, truth, nprobe, ComputeMode::fp32);
      const double half = recall_at_10(resources, *ivf, queries, truth, nprobe, ComputeMode::fp16);
      const double bf = recall_at_10(resources, *ivf, queries, truth, nprobe, ComputeMode::bf16);
      EXPECT_GE(half, previous - 0.01) << "nprobe " << nprobe;
      EXPECT_NEAR(half, full, 0.02) << "nprobe " << nprobe;
      EXPECT_NEAR(bf, full, 0.02) << "nprobe " << nprobe;
      previous = half;
    }
    EXPECT_GT(previous, m >= 16 ? 0.3 : 0.1);  // uniform random data: PQ is coarse here
  }
}

}  // namespace
}  // namespace quiver
