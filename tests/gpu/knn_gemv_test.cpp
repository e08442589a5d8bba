// The GEMV pass of small batches (cuda/flat/gemv_select.h): the fp32 mode's SGEMM pass for up to
// kGemvSelectMaxQueries queries over a base on the device, as one kernel that selects while it reads.
// Its results must be those of the SGEMM tiles it replaces, bit for bit, and both the CPU's exact
// float32 result (exact_distances.h's sums, ties to the smaller row): awkward row counts (1, below k,
// not multiples of a warp's rows), k from 1 to the largest the pass takes, every dimension class
// (1, 3, 127, 128, 129: the float and float4 kernels), duplicates and exact ties, filters, every
// metric, data far from the origin, an unaligned device base, and bases long enough for many blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "cpp/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/flat/certify.h"
#include "cuda/flat/gemv_select.h"
#include "cuda/flat/knn_passes.h"
#include "exact_float.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver {
namespace {

using testing::DeviceArray;

using Problem = testing::KnnProblem;

struct Output {
  std::vector<float> dist;
  std::vector<int64_t> ids;
};

// The exact result: nq x k, padded with the metric's missing distance and -1.
Output reference(const Problem& p, int64_t k, const std::vector<uint8_t>* filter) {
  Output o;
  testing::exact_knn_reference(p, k, filter, o.dist, o.ids);
  return o;
}

void expect_same(const Output& want, const Output& got, int64_t nq, int64_t k, const char* what) {
  for (int64_t q = 0; q < nq; ++q) {
    for (int64_t i = 0; i < k; ++i) {
      const size_t e = size_t(q * k + i);
      ASSERT_EQ(got.ids[e], want.ids[e]) << what << ": query " << q << " rank " << i;
      ASSERT_EQ(got.dist[e], want.dist[e]) << what << ": query " << q << " rank " << i << " id " << got.ids[e];
    }
  }
}

// Switches the GEMV pass off for a scope (the SGEMM tiles then run), on again after.
class TilesOnly {
 public:
  TilesOnly() { gpu::set_gemv_select_enabled(false); }
  ~TilesOnly() { gpu::set_gemv_select_enabled(true); }
};

// base: p.base itself (host memory), or a device copy when given (rows at `device_base`).
Output search(const Problem& p, int64_t k, const std::vector<uint8_t>* filter = nullptr,
              const float* device_base = nullptr) {
  Output o{std::vector<float>(size_t(p.nq * k), 12345.f), std::vector<int64_t>(size_t(p.nq * k), 12345)};
  gpu::RowFilter f;
  if (filter != nullptr) f = {filter->data(), int64_t(filter->size()) * 8};
  gpu::knn(testing::shared_resources(), p.metric, device_base != nullptr ? device_base : p.base.data(), nullptr, p.n,
           p.dim, p.queries.data(), p.nq, k, o.dist.data(), o.ids.data(), f);
  return o;
}

// The search with the GEMV pass (which must run: `gemv` queries of its first pass), against the
// CPU's result and the tiles' (bit for bit).
void check(const Problem& p, int64_t k, const std::vector<uint8_t>* filter = nullptr, bool gemv = true,
           const float* device_base = nullptr) {
  const Output got = search(p, k, filter, device_base);
  const gpu::KnnPassCounts c = gpu::last_knn_pass_counts();
  EXPECT_EQ(c.gemv, gemv ? p.nq : 0) << "the GEMV pass " << (gemv ? "did not run" : "ran");
  EXPECT_EQ(c.tf32 + c.sgemm + c.direct, p.nq);
  expect_same(reference(p, k, filter), got, p.nq, k, "against the CPU");
  Output tiles;
  {
    TilesOnly off;
    tiles = search(p, k, filter, device_base);
    EXPECT_EQ(gpu::last_knn_pass_counts().gemv, 0);
  }
  expect_same(tiles, got, p.nq, k, "against the SGEMM tiles");
}

TEST(GpuKnnGemv, AwkwardShapesEveryMetric) {
  QV_REQUIRE_GPU();
  struct Shape {
    int64_t n, dim, nq, k;
    Metric metric;
  };
  const int64_t many = testing::sized(4099, 2051);
  const Shape shapes[] = {
      {1, 128, 1, 1, Metric::l2},                // one row
      {1, 3, 2, 10, Metric::inner_product},      // one row, k above n
      {5, 16, 1, 10, Metric::l2},                // n < k
      {31, 1, 3, 7, Metric::l2},                 // dim 1
      {33, 129, 1, 33, Metric::l2},              // k = n, two queue registers
      {257, 4, 4, 1, Metric::cosine},            // k = 1, dim 4, four queries
      {1000, 127, 3, 48, Metric::inner_product}, // the largest k the pass takes (64 candidates)
      {many, 128, 4, 16, Metric::cosine},        // the largest k of one queue register
      {many, 3, 4, 1, Metric::l2},
      {many, 128, 1, 10, Metric::l2},  // the benchmark's query
      {many, 129, 2, 10, Metric::inner_product},
      {many, 127, 3, 20, Metric::l2},
      {many, 260, 1, 10, Metric::l2},             // float4 rows of several chunks a lane
      {1000, 256, 3, 10, Metric::inner_product},  // ... with four queries' kernel (one unused)
      {many, 64, 4, 40, Metric::l2},
  };
  uint32_t seed = 100;
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << "n " << s.n << " dim " << s.dim << " nq " << s.nq << " k " << s.k << " "
                                      << metric_name(s.metric));
    check(testing::uniform_problem(s.n, s.dim, s.nq, s.metric, seed += 2), s.k);
  }
}

// Duplicate rows and small integers: exact ties among keys and distances, which the lower row wins,
// at the candidates' last place too (the certificate may then fail: the direct pass answers).
TEST(GpuKnnGemv, TiesGoToTheLowerRow) {
  QV_REQUIRE_GPU();
  const int64_t n = testing::sized(3001, 1001), dim = 24;
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    for (int64_t k : {1, 10, 48}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " k " << k);
      Problem p{n, dim, 4, metric, testing::integer_vectors(n, dim, 7, 2), testing::integer_vectors(4, dim, 8, 2)};
      // Every row repeated: rows 2j and 2j + 1 and (every 50th) row j / 3 are equal.
      for (int64_t r = 1; r < n; r += 2) std::copy_n(&p.base[(r - 1) * dim], dim, &p.base[r * dim]);
      for (int64_t r = 150; r < n; r += 50) std::copy_n(&p.base[(r / 3) * dim], dim, &p.base[r * dim]);
      check(p, k);
    }
  }
}

TEST(GpuKnnGemv, Filters) {
  QV_REQUIRE_GPU();
  const int64_t n = testing::sized(5003, 1003);
  std::mt19937 gen(3);
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    SCOPED_TRACE(metric_name(metric));
    const Problem p = testing::uniform_problem(n, 64, 3, metric, 41);
    // About 30% of the rows.
    std::vector<uint8_t> some(size_t((n + 7) / 8));
    for (auto& b : some) b = static_cast<uint8_t>(gen() & gen());
    check(p, 10, &some);
    // Shorter than the base: the rows past it are excluded.
    std::vector<uint8_t> short_filter(size_t(n / 16), 0xff);
    check(p, 10, &short_filter);
    // Three rows: fewer than k.
    std::vector<uint8_t> three(size_t((n + 7) / 8), 0);
    for (int64_t r : {int64_t(0), n / 2, n - 1}) three[size_t(r / 8)] |= uint8_t(1u << (r % 8));
    check(p, 10, &three);
    // None.
    std::vector<uint8_t> none(size_t((n + 7) / 8), 0);
    check(p, 4, &none);
  }
}

// Data far from the origin: |x| |y| large next to the neighbours' gaps; the uncentred bound may not
// certify, and the direct pass answers what it leaves. Exact either way.
TEST(GpuKnnGemv, FarFromTheOrigin) {
  QV_REQUIRE_GPU();
  check(testing::uniform_problem(testing::sized(4001, 1001), 32, 2, Metric::l2, 51, 1000.f), 10);
  check(testing::uniform_problem(testing::sized(4001, 1001), 32, 1, Metric::l2, 53, 30.f), 10);
}

// What the pass does not take runs as before: five queries, 65 candidates (k = 49), queries beyond
// its shared memory, other modes.
TEST(GpuKnnGemv, OnlySmallBatchesAndCandidateCounts) {
  QV_REQUIRE_GPU();
  EXPECT_TRUE(gpu::gemv_select_fits(gpu::kGemvSelectMaxQueries, 128, 64));
  EXPECT_FALSE(gpu::gemv_select_fits(gpu::kGemvSelectMaxQueries + 1, 128, 64));
  EXPECT_FALSE(gpu::gemv_select_fits(1, 128, 65));
  EXPECT_FALSE(gpu::gemv_select_fits(4, 1100, 26));  // the queries' floats beyond its shared memory
  const int64_t n = testing::sized(2003, 503);
  check(testing::uniform_problem(n, 32, gpu::kGemvSelectMaxQueries + 1, Metric::l2, 61), 10, nullptr, false);
  check(testing::uniform_problem(n, 1100, 4, Metric::l2, 67), 10, nullptr, false);
  check(testing::uniform_problem(n, 32, 2, Metric::l2, 63), 49, nullptr, false);
  const Problem p = testing::uniform_problem(n, 32, 2, Metric::l2, 65);
  std::vector<float> d(size_t(p.nq * 10));
  std::vector<int64_t> ids(size_t(p.nq * 10));
  gpu::knn(testing::shared_resources(), p.metric, p.base.data(), nullptr, p.n, p.dim, p.queries.data(), p.nq, 10,
           d.data(), ids.data(), gpu::RowFilter{}, gpu::ComputeMode::tf32);
  EXPECT_EQ(gpu::last_knn_pass_counts().gemv, 0);
}

// A device base one float past an aligned address: the float kernel (no 16-byte loads).
TEST(GpuKnnGemv, UnalignedDeviceBase) {
  QV_REQUIRE_GPU();
  const Problem p = testing::uniform_problem(testing::sized(3001, 1001), 8, 3, Metric::l2, 71);
  std::vector<float> shifted(p.base.size() + 1, 0.f);
  std::copy(p.base.begin(), p.base.end(), shifted.begin() + 1);
  DeviceArray<float> base(shifted);
  check(p, 10, nullptr, true, base.get() + 1);
}

// Long bases: as many blocks as the device holds, each warp with many steps; one and four queries.
TEST(GpuKnnGemv, ManyBlocks) {
  QV_REQUIRE_GPU();
  const int64_t n = testing::sized(300007, 40009);
  for (int64_t nq : {1, 4}) {
    SCOPED_TRACE(::testing::Message() << "nq " << nq);
    const Problem p = testing::uniform_problem(n, 128, nq, Metric::l2, uint32_t(80 + nq));
    DeviceArray<float> base(p.base);
    check(p, 10, nullptr, true, base.get());
  }
}

// An index's matrix (its norms and kept statistics), as the benchmark's batch 1 searches it.
TEST(GpuKnnGemv, DeviceMatrix) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const Problem p = testing::uniform_problem(testing::sized(20011, 4001), 96, 2, Metric::l2, 91);
  auto matrix = gpu::make_matrix(resources, p.dim);
  gpu::matrix_append(resources, *matrix, p.n, p.base.data());
  Output got{std::vector<float>(size_t(p.nq * 10)), std::vector<int64_t>(size_t(p.nq * 10))};
  gpu::knn(resources, p.metric, *matrix, p.queries.data(), p.nq, 10, got.dist.data(), got.ids.data());
  EXPECT_EQ(gpu::last_knn_pass_counts().gemv, p.nq);
  EXPECT_EQ(gpu::last_knn_pass_counts().sgemm, p.nq);
  expect_same(reference(p, 10, nullptr), got, p.nq, 10, "against the CPU");
}

// The kernel pair run directly: each query's kc best (key, row) pairs and the statistics it gathers.
struct Direct {
  std::vector<float> keys;
  std::vector<int32_t> rows;
  std::vector<double> query_stats;
  std::vector<unsigned> base_stats;
};

Direct run_gemv(const std::vector<float>& base, const std::vector<float>& norms, int64_t n, int64_t dim,
                const std::vector<float>& queries, int64_t nq, int64_t kc, float norms_scale) {
  testing::TestDeviceScope scope;
  const int64_t blocks = gpu::gemv_select_blocks(testing::shared_resources().limits(), nq, n, dim, kc);
  DeviceArray<float> d_base(base), d_norms(norms), d_queries(queries);
  DeviceArray<float> block_keys{size_t(nq * blocks * kc)}, keys{size_t(nq * kc)}, block_norms{size_t(blocks)};
  DeviceArray<int32_t> block_rows{size_t(nq * blocks * kc)}, rows{size_t(nq * kc)};
  DeviceArray<double> query_stats{size_t(2 * nq)};
  DeviceArray<unsigned> base_stats{size_t(gpu::kBaseStatsCount)};
  gpu::GemvStats stats;
  stats.query_stats = query_stats.get();
  if (!norms.empty()) {
    stats.base_stats = base_stats.get();
    stats.norms_scale = norms_scale;
    stats.block_norms_max = block_norms.get();
  }
  gpu::launch_gemv_select(d_queries.get(), nq, d_base.get(), nullptr, norms.empty() ? nullptr : d_norms.get(), n,
                          dim, kc, nullptr, 0, blocks, block_keys.get(), block_rows.get(), keys.get(), rows.get(),
                          nullptr, stats, 0);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return Direct{keys.to_host(), rows.to_host(), query_stats.to_host(), base_stats.to_host()};
}

// The statistics the pass gathers for the certificate are those of certify.h's own kernels, bit for
// bit: the queries' (aligned and not: dim 128 and 129) and the base's from its norms (a negative and
// a NaN norm among them count as 0).
TEST(GpuKnnGemv, GathersTheCertificateStatistics) {
  QV_REQUIRE_GPU();
  testing::TestDeviceScope scope;
  for (int64_t dim : {128, 129}) {
    for (int64_t nq : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << "dim " << dim << " nq " << nq);
      const Problem p = testing::uniform_problem(testing::sized(100003, 20011), dim, nq, Metric::l2, uint32_t(dim + nq));
      std::vector<float> norms(size_t(p.n));
      for (int64_t r = 0; r < p.n; ++r) {
        double sum = 0;
        for (int64_t c = 0; c < dim; ++c) sum += double(p.base[size_t(r * dim + c)]) * p.base[size_t(r * dim + c)];
        norms[size_t(r)] = float(sum);
      }
      norms[7] = -5.f;
      norms[size_t(p.n / 2)] = NAN;
      const float scale = 1.0000005f;
      const Direct got = run_gemv(p.base, norms, p.n, dim, p.queries, nq, 26, scale);
      DeviceArray<float> d_queries(p.queries), d_norms(norms);
      DeviceArray<double> query_stats{size_t(2 * nq)};
      DeviceArray<unsigned> base_stats(std::vector<unsigned>(size_t(gpu::kBaseStatsCount), 0));
      gpu::launch_query_stats(d_queries.get(), nq, dim, query_stats.get(), 0);
      gpu::launch_norms_max(d_norms.get(), p.n, scale, base_stats.get(), 0);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(got.query_stats, query_stats.to_host());
      EXPECT_EQ(got.base_stats, base_stats.to_host());
    }
  }
}

// Lists whose entries all sit below the next list's: the merge's bound (the kc-th smallest first
// entry) then lets in nearly kc entries of each of kc lists, past what it ranks by counting for kc =
// 64 (the queues merge them instead). Inner product over one dimension: row r's key is -y_r, exact.
TEST(GpuKnnGemv, MergesListsThatLieBelowEachOther) {
  QV_REQUIRE_GPU();
  const int64_t n = testing::sized(200003, 60013), dim = 1;
  for (int64_t kc : {1, 26, 32, 33, 64}) {
    SCOPED_TRACE(::testing::Message() << "kc " << kc);
    const int64_t blocks = gpu::gemv_select_blocks(testing::shared_resources().limits(), 1, n, dim, kc);
    // The kernel's rows go to the grid's warps in steps of 8, 8 warps a block.
    std::vector<float> base(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      const int64_t block = (r / 8) % (blocks * 8) / 8;
      base[size_t(r)] = float(blocks - block) + float(r % 1024) * 1e-4f;  // block 0's keys the smallest
    }
    const Direct got = run_gemv(base, {}, n, dim, {1.f}, 1, kc, 1.f);
    std::vector<std::pair<float, int32_t>> all;
    for (int64_t r = 0; r < n; ++r) all.emplace_back(-base[size_t(r)], int32_t(r));
    std::sort(all.begin(), all.end());
    for (int64_t i = 0; i < kc; ++i) {
      ASSERT_EQ(got.rows[size_t(i)], all[size_t(i)].second) << "rank " << i;
      ASSERT_EQ(got.keys[size_t(i)], all[size_t(i)].first) << "rank " << i;
    }
  }
}

}  // namespace
}  // namespace quiver
