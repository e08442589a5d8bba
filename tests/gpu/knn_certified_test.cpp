// gpu::knn's fp32 mode returns exactly the float32 result: per query the k rows with the smallest
// exact float32 distance, summed as cuda/flat/exact_distances.h defines it (one fixed order), ties to
// the smaller row, with those very distances. Compared bit for bit with a CPU evaluation of the same
// sums, on data where the TF32 certificate holds (uniform, clustered, far from the origin once
// centred) and where it cannot (huge spreads, near-duplicates below TF32's resolution, exact ties),
// so that the SGEMM and direct fallbacks run too (checked through knn_passes.h); every metric,
// k = 1 .. 2048, n < k, filters, host / device / pinned / mixed pointers, a DeviceMatrix (and the
// certificate statistics it keeps), small tiles and a streamed base.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cpp/core/error.h"
#include "cuda/flat/certify.h"
#include "cuda/flat/device_matrix.h"
#include "cuda/flat/knn_passes.h"
#include "exact_float.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver {
namespace {

using testing::DeviceArray;

using Problem = testing::KnnProblem;

// `centres` random points, each with many copies moved by `noise`: distances among a centre's
// copies differ far below TF32's (and for small noise float's) resolution of the inner products.
Problem near_duplicates(int64_t n, int64_t dim, int64_t nq, Metric metric, int64_t centres, float noise,
                        uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  std::vector<float> c(size_t(centres * dim));
  for (auto& v : c) v = unit(gen);
  auto draw = [&](int64_t rows) {
    std::vector<float> x(size_t(rows * dim));
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t j = int64_t(gen() % uint32_t(centres));
      for (int64_t d = 0; d < dim; ++d) x[r * dim + d] = c[j * dim + d] + noise * unit(gen);
    }
    return x;
  };
  Problem p{n, dim, nq, metric, draw(n), draw(nq)};
  if (metric == Metric::cosine) {
    testing::normalize(p.base, dim);
    testing::normalize(p.queries, dim);
  }
  return p;
}

void expect_exact(const Problem& p, int64_t k, const std::vector<float>& dist, const std::vector<int64_t>& ids,
                  const std::vector<uint8_t>* filter = nullptr) {
  std::vector<float> want_d;
  std::vector<int64_t> want_i;
  testing::exact_knn_reference(p, k, filter, want_d, want_i);
  for (int64_t q = 0; q < p.nq; ++q) {
    for (int64_t i = 0; i < k; ++i) {
      const size_t e = size_t(q * k + i);
      ASSERT_EQ(ids[e], want_i[e]) << "query " << q << " rank " << i;
      ASSERT_EQ(dist[e], want_d[e]) << "query " << q << " rank " << i << " id " << ids[e];
    }
  }
}

struct Output {
  std::vector<float> dist;
  std::vector<int64_t> ids;
};

// `queries`: p.queries, or a copy of them in other memory.
Output search(gpu::Resources& resources, const Problem& p, int64_t k, const std::vector<uint8_t>* filter = nullptr,
              const float* queries = nullptr) {
  Output o{std::vector<float>(size_t(p.nq * k), 12345.f), std::vector<int64_t>(size_t(p.nq * k), 12345)};
  gpu::RowFilter f;
  if (filter) f = {filter->data(), int64_t(filter->size()) * 8};
  gpu::knn(resources, p.metric, p.base.data(), nullptr, p.n, p.dim, queries != nullptr ? queries : p.queries.data(),
           p.nq, k, o.dist.data(), o.ids.data(), f);
  return o;
}

int64_t answered(const gpu::KnnPassCounts& c) { return c.tf32 + c.sgemm + c.direct; }

TEST(GpuKnnCertified, ExactForEveryKAndMetric) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  uint32_t seed = 1;
  for (Metric metric : {Metric::l2, Metric::inner_product, Metric::cosine}) {
    for (int64_t nq : {40, 7}) {  // the TF32 pass, the SGEMM pass
      for (int64_t k : {1, 7, 16, 17, 100, 1000, 1024, 1639, 1640, 2048}) {
        SCOPED_TRACE(::testing::Message() << metric_name(metric) << " nq " << nq << " k " << k);
        const Problem p = testing::uniform_problem(3001, 33, nq, metric, seed++);
        const Output o = search(resources, p, k);
        const gpu::KnnPassCounts c = gpu::last_knn_pass_counts();
        EXPECT_EQ(answered(c), nq);
        if (k <= gpu::kMaxCertifiedK) {
          // Uniform data: the first pass's certificate holds for every query.
          EXPECT_EQ(nq >= 32 ? c.tf32 : c.sgemm, nq);
        } else {
          EXPECT_EQ(c.direct, nq);
        }
        expect_exact(p, k, o.dist, o.ids);
      }
    }
  }
}

TEST(GpuKnnCertified, CertifiesTheBenchmarkShapeWithTf32) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (int64_t k : {10, 100}) {
    // 260 queries: the TF32 pass runs as one kernel (cuda/flat/tf32_select.h).
    const Problem p = testing::uniform_problem(testing::sized(50000, 12000), 128, 260, Metric::l2, 7);
    const Output o = search(resources, p, k);
    EXPECT_EQ(gpu::last_knn_pass_counts().tf32, p.nq) << "k " << k;
    expect_exact(p, k, o.dist, o.ids);
  }
}

// Every pass at batch sizes where another one runs by default (the thresholds moved, knn_passes.h):
// the SGEMM pass (a GEMV up to four queries), the TF32 pass in cuBLAS tiles and as one kernel; exact
// on each, uniform data certified by the pass itself.
class BatchPasses {
 public:
  explicit BatchPasses(gpu::BatchPassThresholds thresholds) { gpu::set_batch_pass_thresholds(thresholds); }
  ~BatchPasses() { gpu::set_batch_pass_thresholds(gpu::default_batch_pass_thresholds()); }
};

TEST(GpuKnnCertified, EveryPassAtEveryBatchSize) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  enum class Path { sgemm, tf32_tiles, fused };
  uint32_t seed = 90;
  for (Path path : {Path::sgemm, Path::tf32_tiles, Path::fused}) {
    const BatchPasses passes(path == Path::sgemm       ? gpu::BatchPassThresholds{kNever, kNever}
                             : path == Path::tf32_tiles ? gpu::BatchPassThresholds{1, kNever}
                                                        : gpu::BatchPassThresholds{1, 1});
    for (Metric metric : {Metric::l2, Metric::inner_product}) {
      if (testing::skip_under_sanitizer(metric == Metric::inner_product)) continue;
      for (int64_t nq : {1, 5, 33, 70}) {
        for (int64_t k : {10, 100}) {
          SCOPED_TRACE(::testing::Message() << "path " << int(path) << " " << metric_name(metric) << " nq " << nq
                                            << " k " << k);
          // Above kMinFusedRows (knn.cu), so that the fused kernel takes the shape.
          const Problem p = testing::uniform_problem(testing::sized(20011, 16411), 40, nq, metric, seed++);
          const Output o = search(resources, p, k);
          const gpu::KnnPassCounts c = gpu::last_knn_pass_counts();
          EXPECT_EQ(path == Path::sgemm ? c.sgemm : c.tf32, nq);
          EXPECT_EQ(c.fused, path == Path::fused ? nq : 0);
          expect_exact(p, k, o.dist, o.ids);
        }
      }
    }
  }
}

// Large host results split the fused pass into query tiles, each tile's results copied to the host
// while the next computes (knn.cu, kFusedResultTileBytes; here 1 MiB: three tiles of 834 queries at
// k = 100); exact, every query certified by the TF32 pass, on the host and on the device.
class FusedResultTileBytes {
 public:
  explicit FusedResultTileBytes(int64_t bytes) { gpu::set_fused_result_tile_bytes(bytes); }
  ~FusedResultTileBytes() { gpu::set_fused_result_tile_bytes(0); }
};

TEST(GpuKnnCertified, LargeHostResultsComeBackByQueryTile) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const FusedResultTileBytes small_tiles(int64_t(1) << 20);
  const Problem p =
      testing::uniform_problem(testing::sized(20000, 16500), 8, testing::sized(2500, 2100), Metric::l2, 71);
  const Output o = search(resources, p, 100);
  EXPECT_EQ(gpu::last_knn_pass_counts().tf32, p.nq);
  expect_exact(p, 100, o.dist, o.ids);
  DeviceArray<float> queries(p.queries), dist{size_t(p.nq * 100)};
  DeviceArray<int64_t> ids{size_t(p.nq * 100)};
  gpu::knn(resources, p.metric, p.base.data(), nullptr, p.n, p.dim, queries.get(), p.nq, 100, dist.get(), ids.get());
  expect_exact(p, 100, dist.to_host(), ids.to_host());
}

// A base of 131 072 rows or more: the fused pass's bounding part starts from the kc-th best of a
// sample of rows searched by one GEMM tile (knn.cu, kSampleRows), up to 256 candidates; the results
// are exact, with and without a filter, near and far from the origin, for L2 and inner products.
TEST(GpuKnnCertified, BoundedFromASampleTile) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const int64_t n = 133000, dim = 24, nq = 260;
  uint32_t seed = 60;
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    for (int64_t k : {1, 10, 100, 204}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " k " << k);
      const Problem p = testing::uniform_problem(n, dim, nq, metric, seed++);
      const Output o = search(resources, p, k);
      EXPECT_EQ(gpu::last_knn_pass_counts().tf32, nq);
      expect_exact(p, k, o.dist, o.ids);
    }
  }
  const Problem far = testing::uniform_problem(n, dim, nq, Metric::l2, seed++, 1e3f);
  const Output o = search(resources, far, 10);
  expect_exact(far, 10, o.dist, o.ids);
  std::vector<uint8_t> bits(size_t(n / 8));
  std::mt19937 gen(seed);
  for (auto& b : bits) b = uint8_t(gen());
  const Output filtered = search(resources, far, 10, &bits);
  expect_exact(far, 10, filtered.dist, filtered.ids, &bits);
}

// Beyond 32 candidates (k above 16) the fused kernel still runs the TF32 pass, each split keeping
// its best 32 (knn.cu, kTruncatedSplitsPerList): on rows in random order the certificate, bounded by
// the full splits' last keys too, holds for every query. Rows stored cluster by cluster crowd a
// query's neighbours into one or two splits: more than 32 of its candidates there, the bound
// falls below them, and the query goes to the SGEMM pass; the results are exact either way.
TEST(GpuKnnCertified, TruncatedSplitsCertifyOrFallBack) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const int64_t n = testing::sized(20000, 12000), nq = 256;  // the fused kernel's least
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    for (int64_t k : {17, 33, 48, 100}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " k " << k);
      const Problem p = testing::uniform_problem(n, 128, nq, metric, uint32_t(20 + k));
      const Output o = search(resources, p, k);
      EXPECT_EQ(gpu::last_knn_pass_counts().tf32, nq);
      expect_exact(p, k, o.dist, o.ids);
    }
  }
  // 40 clusters of n / 40 rows each, stored one after the other; queries near the centres.
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  constexpr int64_t kCentres = 40, kDim = 64;
  std::vector<float> centres(size_t(kCentres * kDim));
  for (float& v : centres) v = unit(gen);
  auto near = [&](int64_t j) {
    std::vector<float> x(static_cast<size_t>(kDim));
    for (int64_t d = 0; d < kDim; ++d) x[size_t(d)] = centres[size_t(j * kDim + d)] + 0.1f * unit(gen);
    return x;
  };
  Problem clustered{n, kDim, nq, Metric::l2, {}, {}};
  for (int64_t r = 0; r < n; ++r) {
    const std::vector<float> x = near(r * kCentres / n);
    clustered.base.insert(clustered.base.end(), x.begin(), x.end());
  }
  for (int64_t q = 0; q < nq; ++q) {
    const std::vector<float> x = near(q % kCentres);
    clustered.queries.insert(clustered.queries.end(), x.begin(), x.end());
  }
  const Output o = search(resources, clustered, 40);
  const gpu::KnnPassCounts c = gpu::last_knn_pass_counts();
  EXPECT_EQ(answered(c), nq);
  expect_exact(clustered, 40, o.dist, o.ids);
  std::printf("clustered rows, k = 40: %lld queries certified by TF32, %lld by SGEMM, %lld directly\n",
              (long long)c.tf32, (long long)c.sgemm, (long long)c.direct);
}

TEST(GpuKnnCertified, FewRowsAndOddDimensions) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  struct Shape {
    int64_t n, dim, nq, k;
  };
  uint32_t seed = 100;
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    for (const Shape& s : {Shape{20, 5, 33, 7}, Shape{5, 3, 40, 100}, Shape{1, 1, 1, 1}, Shape{31, 2, 64, 16},
                           Shape{2000, 1000, 35, 10}, Shape{5000, 1, 50, 50}, Shape{40, 17, 3, 2048}}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " n " << s.n << " dim " << s.dim << " nq " << s.nq
                                        << " k " << s.k);
      const Problem p = testing::uniform_problem(s.n, s.dim, s.nq, metric, seed++);
      const Output o = search(resources, p, s.k);
      expect_exact(p, s.k, o.dist, o.ids);
    }
  }
}

// Two clusters `offset` apart (+-offset / 2 on every axis): the base's mean is near the origin, so
// centring (cuda/flat/centring.h) leaves |x| |y| as huge as it was.
Problem two_clusters(int64_t n, int64_t dim, int64_t nq, Metric metric, uint32_t seed, float offset) {
  Problem p = testing::uniform_problem(n, dim, nq, metric, seed);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t d = 0; d < dim; ++d) p.base[r * dim + d] += r % 2 == 0 ? offset / 2 : -offset / 2;
  for (int64_t r = 0; r < nq; ++r)
    for (int64_t d = 0; d < dim; ++d) p.queries[r * dim + d] += r % 2 == 0 ? offset / 2 : -offset / 2;
  return p;
}

// Offsets make |x| |y| huge next to the distances: no GEMM bound can separate the candidates, the
// direct pass answers; moderate offsets defeat TF32 but not always SGEMM. L2 centres the rows
// first: one offset shared by all rows is harmless there, two clusters far apart are not.
TEST(GpuKnnCertified, ExactWhereTheBoundsFail) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    for (int64_t k : {1, 10, 300}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " k " << k);
      const Problem huge = metric == Metric::l2 ? two_clusters(4000, 24, 50, metric, 11, 2e4f)
                                                : testing::uniform_problem(4000, 24, 50, metric, 11, 1e4f);
      const Output o = search(resources, huge, k);
      const gpu::KnnPassCounts c = gpu::last_knn_pass_counts();
      EXPECT_EQ(answered(c), huge.nq);
      if (metric == Metric::l2) EXPECT_EQ(c.direct, huge.nq);
      expect_exact(huge, k, o.dist, o.ids);

      const Problem moderate = testing::uniform_problem(4000, 24, 50, metric, 12, 30.f);
      const Output m = search(resources, moderate, k);
      EXPECT_EQ(answered(gpu::last_knn_pass_counts()), moderate.nq);
      expect_exact(moderate, k, m.dist, m.ids);
    }
  }
  // Near-duplicates: the three passes all have work.
  int64_t sgemm = 0, direct = 0;
  for (float noise : {1e-2f, 1e-4f, 1e-6f}) {
    for (Metric metric : {Metric::l2, Metric::inner_product}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " noise " << noise);
      const Problem p = near_duplicates(6000, 40, 64, metric, 20, noise, 13);
      const Output o = search(resources, p, 10);
      const gpu::KnnPassCounts c = gpu::last_knn_pass_counts();
      EXPECT_EQ(answered(c), p.nq);
      sgemm += c.sgemm;
      direct += c.direct;
      expect_exact(p, 10, o.dist, o.ids);
    }
  }
  EXPECT_GT(direct, 0);
  std::printf("near-duplicates: %lld queries certified by SGEMM, %lld answered directly\n", (long long)sgemm,
              (long long)direct);
}

// The benchmark's data far from the origin (issue 19): clusters around centres drawn in [0, 4)^dim,
// uniform [0, 1) noise. The TF32 pass certifies it as it does centred data, because it multiplies
// the rows less the base's mean; the results stay the exact ones (the re-rank reads the original
// rows). Fused kernel (260 queries, k = 10), cuBLAS TF32 tiles (40 queries; k = 100), a base
// given with its norms (of the original rows), a streamed base, and a pure offset of 1e4.
Problem offset_clusters(int64_t n, int64_t dim, int64_t nq, int64_t centres, float offset, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::vector<float> c(size_t(centres * dim));
  for (auto& v : c) v = offset + 4.f * unit(gen);
  auto draw = [&](int64_t rows) {
    std::vector<float> x(size_t(rows * dim));
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t j = int64_t(gen() % uint32_t(centres));
      for (int64_t d = 0; d < dim; ++d) x[r * dim + d] = c[j * dim + d] + unit(gen);
    }
    return x;
  };
  return Problem{n, dim, nq, Metric::l2, draw(n), draw(nq)};
}

TEST(GpuKnnCertified, CentresDataFarFromTheOrigin) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions streaming = testing::test_resources_options();
  streaming.tile_bytes = testing::small_tile_bytes();
  streaming.stream_bytes = 1;
  auto streamed = gpu::make_resources(streaming);
  const int64_t n = testing::sized(30011, 12011);
  struct Case {
    int64_t nq, k;
    float offset;
    bool streamed, norms;
  };
  uint32_t seed = 500;
  for (const Case& c : {Case{260, 10, 0.f, false, false}, Case{40, 10, 0.f, false, true}, Case{260, 100, 0.f, false, false},
                        Case{45, 10, 0.f, true, false}, Case{260, 10, 1e4f, false, false}}) {
    SCOPED_TRACE(::testing::Message() << "nq " << c.nq << " k " << c.k << " offset " << c.offset
                                      << (c.streamed ? " streamed" : "") << (c.norms ? " norms" : ""));
    const Problem p = offset_clusters(n, 128, c.nq, n / 100, c.offset, seed++);
    std::vector<float> norms(size_t(p.n));
    for (int64_t j = 0; j < p.n; ++j)
      norms[j] = float(testing::exact_value(false, &p.base[j * p.dim], &p.base[j * p.dim], p.dim));
    DeviceArray<float> device_norms(norms);
    gpu::Resources& resources = c.streamed ? *streamed : testing::shared_resources();
    Output o{std::vector<float>(size_t(p.nq * c.k), 12345.f), std::vector<int64_t>(size_t(p.nq * c.k), 12345)};
    gpu::knn(resources, p.metric, p.base.data(), c.norms ? device_norms.get() : nullptr, p.n, p.dim,
             p.queries.data(), p.nq, c.k, o.dist.data(), o.ids.data());
    const gpu::KnnPassCounts counts = gpu::last_knn_pass_counts();
    EXPECT_EQ(answered(counts), p.nq);
    EXPECT_GE(double(counts.tf32), 0.9 * double(p.nq)) << "sgemm " << counts.sgemm << " direct " << counts.direct;
    expect_exact(p, c.k, o.dist, o.ids);
  }
}

// Host queries of 8 MiB or more on a tiled search arrive query tile by query tile (knn.cu,
// kArrivingQueryBytes), each tile's copy beside the tiles before it on the device: results equal
// those of the same queries in device memory (copied whole, one query tile), from pageable and
// page-locked memory, on data near the origin and far from it (centred; most queries then go to
// the SGEMM pass, whose host queries arrive too).
TEST(GpuKnnCertified, LargeHostQueriesArriveByTile) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const int64_t n = 3001, dim = 260, nq = 8200, k = 10;  // dim above the fused kernel's: GEMM tiles
  uint32_t seed = 900;
  for (float offset : {0.f, 1e3f}) {
    SCOPED_TRACE(::testing::Message() << "offset " << offset);
    const Problem p = offset_clusters(n, dim, nq, n / 100, offset, seed++);
    const Output host = search(resources, p, k);
    EXPECT_GT(gpu::last_knn_pass_counts().query_tiles, 1);

    float* pinned = nullptr;
    QV_ASSERT_CUDA(cudaMallocHost(&pinned, sizeof(float) * p.queries.size()));
    std::copy(p.queries.begin(), p.queries.end(), pinned);
    const Output from_pinned = search(resources, p, k, nullptr, pinned);
    EXPECT_GT(gpu::last_knn_pass_counts().query_tiles, 1);
    cudaFreeHost(pinned);

    DeviceArray<float> device_queries(p.queries);
    const Output whole = search(resources, p, k, nullptr, device_queries.get());
    EXPECT_EQ(gpu::last_knn_pass_counts().query_tiles, 0);
    EXPECT_EQ(host.ids, whole.ids);
    EXPECT_EQ(host.dist, whole.dist);
    EXPECT_EQ(from_pinned.ids, whole.ids);
    EXPECT_EQ(from_pinned.dist, whole.dist);
  }
}

// Small integers: exact ties everywhere (the certificate fails where more than kc rows tie).
TEST(GpuKnnCertified, TiesAndDuplicatesGoToTheSmallerRow) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions small_tiles = testing::test_resources_options();
  small_tiles.tile_bytes = testing::small_tile_bytes();
  auto small = gpu::make_resources(small_tiles);
  for (gpu::Resources* resources : {&testing::shared_resources(), small.get()}) {
    for (Metric metric : {Metric::l2, Metric::inner_product}) {
      for (int64_t k : {1, 7, 100, 2048}) {
        SCOPED_TRACE(::testing::Message() << metric_name(metric) << " k " << k);
        const int64_t n = testing::sized(20000, 9000);  // two base tiles or more
        Problem p{n, 4, 40, metric, testing::integer_vectors(n, 4, 7, 2), testing::integer_vectors(40, 4, 8, 2)};
        for (int64_t j = 0; j < 200; ++j) std::copy_n(&p.base[j * p.dim], p.dim, &p.base[(p.n - 1 - j) * p.dim]);
        const Output o = search(*resources, p, k);
        expect_exact(p, k, o.dist, o.ids);
      }
    }
  }
}

TEST(GpuKnnCertified, AppliesTheRowFilter) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  std::mt19937 gen(3);
  for (float offset : {0.f, 1e4f}) {
    for (int64_t k : {5, 100, 1000}) {
      SCOPED_TRACE(::testing::Message() << "offset " << offset << " k " << k);
      const Problem p = testing::uniform_problem(6000, 20, 45, Metric::l2, 31, offset);
      std::vector<uint8_t> bits(size_t(p.n / 8 - 10));  // stops before n: the last rows are excluded
      for (auto& b : bits) b = uint8_t((gen() % 2 == 0 ? 1u : 0u) << (gen() % 8));
      const Output o = search(resources, p, k, &bits);
      expect_exact(p, k, o.dist, o.ids, &bits);
    }
  }
}

// Every kind of pointer, also on the fallback path (the offset data), where results are put back
// row by row into the caller's arrays.
TEST(GpuKnnCertified, AcceptsHostDevicePinnedAndMixedPointers) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (float offset : {0.f, 1e4f}) {
    SCOPED_TRACE(::testing::Message() << "offset " << offset);
    const Problem p = testing::uniform_problem(4000, 50, 64, Metric::l2, 77, offset);
    const int64_t k = 32;
    std::vector<float> norms(size_t(p.n));
    for (int64_t j = 0; j < p.n; ++j)
      norms[j] = float(testing::exact_value(false, &p.base[j * p.dim], &p.base[j * p.dim], p.dim));
    DeviceArray<float> base(p.base), queries(p.queries), base_norms(norms);
    DeviceArray<float> dist(size_t(p.nq * k));
    DeviceArray<int64_t> ids(size_t(p.nq * k));
    gpu::knn(resources, p.metric, base.get(), base_norms.get(), p.n, p.dim, queries.get(), p.nq, k, dist.get(),
             ids.get());
    expect_exact(p, k, dist.to_host(), ids.to_host());
    gpu::knn(resources, p.metric, base.get(), norms.data(), p.n, p.dim, p.queries.data(), p.nq, k, dist.get(),
             ids.get());
    expect_exact(p, k, dist.to_host(), ids.to_host());
    float* pinned_d = nullptr;
    int64_t* pinned_i = nullptr;
    QV_ASSERT_CUDA(cudaMallocHost(&pinned_d, sizeof(float) * p.nq * k));
    QV_ASSERT_CUDA(cudaMallocHost(&pinned_i, sizeof(int64_t) * p.nq * k));
    gpu::knn(resources, p.metric, p.base.data(), nullptr, p.n, p.dim, queries.get(), p.nq, k, pinned_d, pinned_i);
    expect_exact(p, k, std::vector<float>(pinned_d, pinned_d + p.nq * k),
                 std::vector<int64_t>(pinned_i, pinned_i + p.nq * k));
    cudaFreeHost(pinned_d);
    cudaFreeHost(pinned_i);
    // Distances on the device, ids on the host.
    std::vector<int64_t> host_ids(size_t(p.nq * k));
    gpu::knn(resources, p.metric, base.get(), nullptr, p.n, p.dim, queries.get(), p.nq, k, dist.get(),
             host_ids.data());
    expect_exact(p, k, dist.to_host(), host_ids);
    // A DeviceMatrix (its own norms), as an index searches.
    auto matrix = gpu::make_matrix(resources, p.dim);
    gpu::matrix_append(resources, *matrix, p.n, p.base.data());
    std::vector<float> hd(size_t(p.nq * k));
    std::vector<int64_t> hi(size_t(p.nq * k));
    gpu::knn(resources, p.metric, gpu::matrix_data(*matrix), gpu::matrix_norms(*matrix), p.n, p.dim,
             p.queries.data(), p.nq, k, hd.data(), hi.data());
    expect_exact(p, k, hd, hi);
  }
}

// The statistics a DeviceMatrix keeps for the certificate are those of its rows (appended in
// batches), stay upper bounds after removals, and give the searches of an index the exact results.
TEST(GpuKnnCertified, AMatrixKeepsTheStatisticsOfItsRows) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const int64_t k = 10;
  Problem p = testing::uniform_problem(testing::sized(6000, 3000), 64, 300, Metric::l2, 31);
  for (int64_t i = 0; i < p.dim; ++i) p.base[size_t(17 * p.dim + i)] *= 3.f;  // the largest row
  auto matrix = gpu::make_matrix(resources, p.dim);
  const int64_t first = p.n / 3;
  gpu::matrix_append(resources, *matrix, first, p.base.data());
  gpu::matrix_append(resources, *matrix, p.n - first, p.base.data() + first * p.dim);
  auto stats_of = [&](const float* rows, int64_t n) {
    DeviceArray<unsigned> stats(std::vector<unsigned>(gpu::kBaseStatsCount, 0));
    testing::TestDeviceScope scope;
    gpu::launch_base_stats(rows, n, p.dim, stats.get(), nullptr);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return stats.to_host();
  };
  auto kept = [&] {
    std::vector<unsigned> out(gpu::kBaseStatsCount);
    EXPECT_EQ(cudaMemcpy(out.data(), gpu::matrix_base_stats(*matrix), sizeof(unsigned) * out.size(),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
  };
  EXPECT_EQ(kept(), stats_of(gpu::matrix_data(*matrix), p.n));
  std::vector<float> hd(size_t(p.nq * k));
  std::vector<int64_t> hi(size_t(p.nq * k));
  gpu::knn(resources, p.metric, *matrix, p.queries.data(), p.nq, k, hd.data(), hi.data());
  EXPECT_EQ(gpu::last_knn_pass_counts().tf32, p.nq);
  expect_exact(p, k, hd, hi);

  // Without the largest row: bounds above the remaining rows' own statistics, results exact.
  const std::vector<int64_t> removed = {3, 17, 400};
  gpu::matrix_remove_rows(resources, *matrix, int64_t(removed.size()), removed.data());
  Problem rest = p;
  rest.base.clear();
  for (int64_t r = 0; r < p.n; ++r)
    if (std::find(removed.begin(), removed.end(), r) == removed.end())
      rest.base.insert(rest.base.end(), p.base.begin() + r * p.dim, p.base.begin() + (r + 1) * p.dim);
  rest.n = p.n - int64_t(removed.size());
  const std::vector<unsigned> now = kept(), own = stats_of(gpu::matrix_data(*matrix), rest.n);
  for (int64_t i = 0; i < gpu::kBaseStatsCount; ++i) EXPECT_GE(now[size_t(i)], own[size_t(i)]) << "statistic " << i;
  gpu::knn(resources, rest.metric, *matrix, rest.queries.data(), rest.nq, k, hd.data(), hi.data());
  expect_exact(rest, k, hd, hi);
}

// Many query and base tiles, and a host base streamed in chunks: every pass (TF32, SGEMM, direct)
// runs streamed.
TEST(GpuKnnCertified, SmallTilesAndStreamedBase) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions small_tiles = testing::test_resources_options();
  small_tiles.tile_bytes = testing::small_tile_bytes();
  auto tiled = gpu::make_resources(small_tiles);
  gpu::ResourcesOptions streaming = small_tiles;
  streaming.stream_bytes = 1;
  auto streamed = gpu::make_resources(streaming);
  for (gpu::Resources* resources : {tiled.get(), streamed.get()}) {
    for (float offset : {0.f, 30.f, 1e4f}) {
      if (testing::sanitizer_sizes() && offset == 30.f) continue;  // the two others cover every pass
      for (int64_t k : {10, 100, 1500}) {
        SCOPED_TRACE(::testing::Message() << (resources == streamed.get() ? "streamed" : "tiled") << " offset "
                                          << offset << " k " << k);
        const Problem p = testing::uniform_problem(20011, 12, 37, Metric::l2, 41, offset);
        const Output o = search(*resources, p, k);
        expect_exact(p, k, o.dist, o.ids);
      }
    }
  }
}

}  // namespace
}  // namespace quiver
