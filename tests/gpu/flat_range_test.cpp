// gpu::range_search and the "Flat" index's range search on a CUDA context return exactly the float32
// result: per query every row whose exact float32 value (the sum of exact_distances.h, in its order)
// meets the radius (L2 <=, similarities >=), closest first, ties to the smaller row, with those very
// values. Compared bit for bit with a CPU evaluation of the same sums over awkward shapes, every
// metric, radius 0, a radius covering every row, duplicates and exact ties, filters, the limit on
// results, host and device inputs, custom ids, small tiles and hit buffers too small for a block
// (the paths that search and sort in parts); and with the CPU Flat index (its own float rounding)
// up to rows on the boundary. The graph index on a CUDA context range-searches its device copy's
// vectors the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cpp/backend/gpu_range.h"
#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/distance/vectors.h"
#include "cpp/index/factory.h"
#include "cuda/flat/range_search.h"
#include "exact_float.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver {
namespace {

using testing::DeviceArray;

constexpr float kInf = std::numeric_limits<float>::infinity();

// exact_distances.h's sum on the CPU: the squared distance (L2) or the product (similarities).
float exact_value(bool l2, const float* x, const float* y, int64_t dim) { return testing::fma_value(l2, x, y, dim); }

struct Bits {
  std::vector<uint8_t> bytes;
  int64_t nbits = 0;
  bool allows(int64_t row) const {
    return row >= 0 && row < nbits && ((bytes[size_t(row >> 3)] >> (row & 7)) & 1);
  }
  gpu::RowFilter rows() const { return {bytes.data(), nbits}; }
};

Bits random_bits(int64_t nbits, uint32_t seed, double share = 0.5) {
  std::mt19937 gen(seed);
  std::bernoulli_distribution keep(share);
  Bits b;
  b.nbits = nbits;
  b.bytes.assign(size_t(std::max<int64_t>(1, (nbits + 7) / 8)), 0);
  for (int64_t r = 0; r < nbits; ++r)
    if (keep(gen)) b.bytes[size_t(r >> 3)] |= uint8_t(1u << (r & 7));
  return b;
}

struct Problem {
  Metric metric = Metric::l2;
  int64_t n = 0, dim = 0, nq = 0;
  std::vector<float> base, queries;
  bool l2() const { return metric == Metric::l2; }
};

Problem uniform(Metric metric, int64_t n, int64_t dim, int64_t nq, uint32_t seed) {
  Problem p{metric, n, dim, nq, testing::uniform_vectors(n, dim, seed), testing::uniform_vectors(nq, dim, seed + 7)};
  if (metric == Metric::cosine) {
    testing::normalize(p.base, dim);
    testing::normalize(p.queries, dim);
  }
  return p;
}

// The expected result, by rows (ids: row -> id applied).
gpu::RangeHits reference(const Problem& p, float radius, const Bits* filter = nullptr,
                         const std::vector<int64_t>* ids = nullptr) {
  gpu::RangeHits r;
  r.lims.assign(size_t(p.nq + 1), 0);
  std::vector<std::pair<float, int64_t>> found;  // (closer-is-smaller key, row)
  for (int64_t q = 0; q < p.nq; ++q) {
    found.clear();
    for (int64_t j = 0; j < p.n; ++j) {
      if (filter != nullptr && !filter->allows(j)) continue;
      const float v = exact_value(p.l2(), &p.queries[size_t(q * p.dim)], &p.base[size_t(j * p.dim)], p.dim);
      if (p.l2() ? v <= radius : v >= radius) found.push_back({p.l2() ? v : -v, j});
    }
    std::sort(found.begin(), found.end());
    for (const auto& [key, row] : found) {
      r.rows.push_back(ids != nullptr ? (*ids)[size_t(row)] : row);
      r.distances.push_back(p.l2() ? key : -key);
    }
    r.lims[size_t(q + 1)] = static_cast<int64_t>(r.rows.size());
  }
  return r;
}

// The value at `share` of all (query, row) values, from the closest end: a radius with about that
// share of the base as hits per query.
float radius_for(const Problem& p, double share) {
  std::vector<float> all;
  all.reserve(size_t(p.n * p.nq));
  for (int64_t q = 0; q < p.nq; ++q)
    for (int64_t j = 0; j < p.n; ++j)
      all.push_back(exact_value(p.l2(), &p.queries[size_t(q * p.dim)], &p.base[size_t(j * p.dim)], p.dim));
  if (!p.l2())
    for (float& v : all) v = -v;
  const size_t at = std::min(all.size() - 1, size_t(share * double(all.size())));
  std::nth_element(all.begin(), all.begin() + at, all.end());
  return p.l2() ? all[at] : -all[at];
}

void expect_same(const gpu::RangeHits& got, const gpu::RangeHits& want) {
  ASSERT_EQ(got.lims, want.lims);
  ASSERT_EQ(got.rows.size(), want.rows.size());
  ASSERT_EQ(got.distances.size(), want.distances.size());
  for (size_t i = 0; i < want.rows.size(); ++i) {
    const auto query = std::upper_bound(want.lims.begin(), want.lims.end(), int64_t(i)) - want.lims.begin() - 1;
    ASSERT_EQ(got.rows[i], want.rows[i]) << "query " << query << " hit " << int64_t(i) - want.lims[size_t(query)];
    ASSERT_EQ(got.distances[i], want.distances[i])
        << "query " << query << " hit " << int64_t(i) - want.lims[size_t(query)] << " row " << want.rows[i];
  }
}

gpu::RangeHits search(gpu::Resources& resources, const Problem& p, float radius, gpu::RowFilter filter = {},
                      int64_t max_results = 0) {
  return gpu::range_search(resources, p.metric, p.base.data(), nullptr, p.n, p.dim, p.queries.data(), p.nq, radius,
                           filter, max_results);
}

int64_t most_hits(const gpu::RangeHits& r) {
  int64_t most = 0;
  for (size_t q = 0; q + 1 < r.lims.size(); ++q) most = std::max(most, r.lims[q + 1] - r.lims[q]);
  return most;
}

// Resets the testing limits of the hit and sort buffers on the way out.
struct BufferLimits {
  BufferLimits(int64_t hits, int64_t sort) { gpu::set_range_buffer_limits_for_testing(hits, sort); }
  ~BufferLimits() { gpu::set_range_buffer_limits_for_testing(0, 0); }
};

TEST(GpuFlatRange, ExactForEveryMetricAndAwkwardShapes) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  uint32_t seed = 1;
  for (Metric metric : {Metric::l2, Metric::inner_product, Metric::cosine}) {
    if (testing::skip_under_sanitizer(metric == Metric::cosine)) continue;
    for (int64_t n : {1, 31, 33, 1000, 4097}) {
      for (int64_t dim : {1, 3, 17, 100, 129}) {
        for (int64_t nq : {7, 40}) {  // SGEMM, TF32 (or SGEMM where L2's TF32 band is wide)
          SCOPED_TRACE(::testing::Message() << metric_name(metric) << " n " << n << " dim " << dim << " nq " << nq);
          const Problem p = uniform(metric, n, dim, nq, seed++);
          const float radius = radius_for(p, 0.05);
          const gpu::RangeHits want = reference(p, radius);
          ASSERT_GT(want.rows.size(), 0u);
          ASSERT_NO_FATAL_FAILURE(expect_same(search(resources, p, radius), want));
          if (nq < 32) EXPECT_FALSE(gpu::last_range_call_stats().tf32);
        }
      }
    }
  }
}

TEST(GpuFlatRange, TiesAndDuplicatesInRowOrder) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    for (int64_t nq : {5, 40}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " nq " << nq);
      // Small integers: every value is exact, so many rows tie; row 5 appears four times.
      Problem p{metric, 1000, 17, nq, testing::integer_vectors(1000, 17, 3, 2), {}};
      for (int64_t copy : {100, 101, 700})
        std::copy_n(p.base.begin() + 5 * p.dim, p.dim, p.base.begin() + copy * p.dim);
      for (int64_t q = 0; q < nq; ++q)  // queries are rows of the base, the first one row 5
        p.queries.insert(p.queries.end(), p.base.begin() + (q * 37 % 1000 == 0 ? 5 : q * 37 % 1000) * p.dim,
                         p.base.begin() + ((q * 37 % 1000 == 0 ? 5 : q * 37 % 1000) + 1) * p.dim);
      for (float radius : {0.f, 3.f, 20.f}) {
        SCOPED_TRACE(::testing::Message() << "radius " << radius);
        const gpu::RangeHits want = reference(p, radius);
        ASSERT_NO_FATAL_FAILURE(expect_same(search(resources, p, radius), want));
      }
      if (metric == Metric::l2) {  // radius 0: the query's own row and its copies, in row order
        const gpu::RangeHits got = search(resources, p, 0.f);
        ASSERT_EQ(got.lims[1] - got.lims[0], 4);
        EXPECT_EQ(std::vector<int64_t>(got.rows.begin(), got.rows.begin() + 4),
                  (std::vector<int64_t>{5, 100, 101, 700}));
        for (int i = 0; i < 4; ++i) EXPECT_EQ(got.distances[size_t(i)], 0.f);
      }
    }
  }
}

TEST(GpuFlatRange, RadiusCoveringEveryRow) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (Metric metric : {Metric::l2, Metric::inner_product, Metric::cosine}) {
    const Problem p = uniform(metric, 4097, 33, 33, 11);
    const bool l2 = metric == Metric::l2;
    for (float radius : {l2 ? 1e30f : -1e30f, l2 ? kInf : -kInf}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " radius " << radius);
      const gpu::RangeHits got = search(resources, p, radius);
      for (int64_t q = 0; q < p.nq; ++q) ASSERT_EQ(got.lims[size_t(q + 1)] - got.lims[size_t(q)], p.n);
      ASSERT_NO_FATAL_FAILURE(expect_same(got, reference(p, radius)));
    }
  }
}

TEST(GpuFlatRange, EmptyInputsAndNegativeL2Radius) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const Problem p = uniform(Metric::l2, 100, 8, 10, 5);
  gpu::RangeHits none = search(resources, p, -1.f);
  EXPECT_EQ(none.lims, std::vector<int64_t>(11, 0));
  EXPECT_TRUE(none.rows.empty());
  gpu::RangeHits no_queries =
      gpu::range_search(resources, Metric::l2, p.base.data(), nullptr, p.n, p.dim, nullptr, 0, 1.f);
  EXPECT_EQ(no_queries.lims, std::vector<int64_t>{0});
  gpu::RangeHits no_rows = gpu::range_search(resources, Metric::inner_product, nullptr, nullptr, 0, p.dim,
                                             p.queries.data(), p.nq, -kInf);
  EXPECT_EQ(no_rows.lims, std::vector<int64_t>(11, 0));
  EXPECT_THROW(gpu::range_search(resources, Metric::l2, p.base.data(), nullptr, p.n, p.dim, p.queries.data(), p.nq,
                                 std::nanf("")),
               Error);
}

TEST(GpuFlatRange, RowFilter) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    for (int64_t nq : {6, 50}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " nq " << nq);
      const Problem p = uniform(metric, 3001, 24, nq, 21);
      const float radius = radius_for(p, 0.2);
      const Bits bits = random_bits(p.n - 100, 22);  // the last 100 rows are beyond the filter
      ASSERT_NO_FATAL_FAILURE(expect_same(search(resources, p, radius, bits.rows()), reference(p, radius, &bits)));
      const Bits nothing = random_bits(0, 23);
      const gpu::RangeHits empty = search(resources, p, radius, nothing.rows());
      EXPECT_EQ(empty.lims, std::vector<int64_t>(size_t(nq + 1), 0));
    }
  }
}

TEST(GpuFlatRange, LimitOnResults) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const Problem p = uniform(Metric::l2, 2000, 16, 40, 31);
  const float radius = radius_for(p, 0.1);
  const gpu::RangeHits want = reference(p, radius);
  const int64_t most = most_hits(want);
  ASSERT_GT(most, 1);
  ASSERT_NO_FATAL_FAILURE(expect_same(search(resources, p, radius, {}, most), want));
  try {
    search(resources, p, radius, {}, most - 1);
    FAIL() << "no error above the limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::too_many_results);
    const std::string message = e.what();
    EXPECT_NE(message.find("query"), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(most - 1)), std::string::npos) << message;
  }
  // The Resources stays usable.
  ASSERT_NO_FATAL_FAILURE(expect_same(search(resources, p, radius), want));
}

TEST(GpuFlatRange, HostAndDeviceInputs) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    SCOPED_TRACE(metric_name(metric));
    const Problem p = uniform(metric, 5000, 36, 64, 41);
    const float radius = radius_for(p, 0.02);
    const gpu::RangeHits want = reference(p, radius);
    std::vector<float> norms(size_t(p.n));  // to float accuracy, as the backend requires
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < p.dim; ++i) sum += double(p.base[size_t(j * p.dim + i)]) * p.base[size_t(j * p.dim + i)];
      norms[size_t(j)] = float(sum);
    }
    DeviceArray<float> base(p.base), queries(p.queries), device_norms(norms);
    ASSERT_NE(base.get(), nullptr);
    ASSERT_NO_FATAL_FAILURE(expect_same(gpu::range_search(resources, p.metric, base.get(), nullptr, p.n, p.dim,
                                                          queries.get(), p.nq, radius),
                                        want));
    ASSERT_NO_FATAL_FAILURE(expect_same(gpu::range_search(resources, p.metric, base.get(), device_norms.get(), p.n,
                                                          p.dim, p.queries.data(), p.nq, radius),
                                        want));
    ASSERT_NO_FATAL_FAILURE(expect_same(gpu::range_search(resources, p.metric, p.base.data(), norms.data(), p.n,
                                                          p.dim, queries.get(), p.nq, radius),
                                        want));
  }
}

// Small tiles: many blocks of queries and column tiles; a radius with many hits overflows the first
// hit buffer (searched again), hit buffers capped below a block's hits (searched in parts), and sort
// buffers capped below a block's hits (sorted in parts).
TEST(GpuFlatRange, SmallTilesAndBuffersInParts) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions options = testing::test_resources_options();
  options.tile_bytes = testing::small_tile_bytes();  // 64 KiB: blocks of at most 128 queries
  auto resources = gpu::make_resources(options);
  // More queries than a block: a first block of min(256, max_rows), the rest in balanced blocks.
  const int64_t max_rows = options.tile_bytes / int64_t(sizeof(float)) / 128;
  const int64_t nq = testing::sized(300, 600);
  const int64_t first = std::min<int64_t>(256, max_rows);
  const int64_t blocks = 1 + (nq - first + max_rows - 1) / max_rows;
  ASSERT_GE(blocks, 2);
  const Problem p = uniform(Metric::l2, testing::sized(4097, 1025), 17, nq, 51);
  const float radius = radius_for(p, 0.5);
  const gpu::RangeHits want = reference(p, radius);
  const int64_t most = most_hits(want);
  ASSERT_GT(most, 200);

  // The first block's hits overflow the first hit buffer (a 32nd of a tile): searched again.
  ASSERT_NO_FATAL_FAILURE(expect_same(search(*resources, p, radius), want));
  gpu::RangeCallStats stats = gpu::last_range_call_stats();
  EXPECT_GE(stats.overflows, 1);
  EXPECT_EQ(stats.searches, blocks + stats.overflows);
  EXPECT_EQ(stats.sorts, blocks);

  // Queries' worth of hits a buffer holds. Under the sanitizer about five parts a search (the
  // test reached racecheck's 450 s limit with about thirteen, on an H200).
  const int64_t per_part = testing::sized(3, 100);
  {
    BufferLimits limits(per_part * most, 0);
    ASSERT_NO_FATAL_FAILURE(expect_same(search(*resources, p, radius), want));
    stats = gpu::last_range_call_stats();
    EXPECT_GE(stats.searches, blocks + int64_t(want.rows.size()) / (per_part * most));
    EXPECT_LE(stats.hit_capacity, per_part * most);
  }
  {
    BufferLimits limits(0, per_part * most);
    ASSERT_NO_FATAL_FAILURE(expect_same(search(*resources, p, radius), want));
    EXPECT_GE(gpu::last_range_call_stats().sorts, int64_t(want.rows.size()) / (per_part * most));
    EXPECT_GT(gpu::last_range_call_stats().sorts, blocks);
  }
  {
    BufferLimits limits(most_hits(want) - 1, 0);  // one query's hits cannot be held
    try {
      search(*resources, p, radius);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::out_of_device_memory) << e.what();
    }
  }
  ASSERT_NO_FATAL_FAILURE(expect_same(search(*resources, p, radius), want));
}

// The TF32 search in one kernel (range_fused.h, dim a multiple of 4 up to 128): several query blocks
// (the last one partial), splits of the base ending inside a tile, a first hit buffer that
// overflows, a row filter, and a radius covering every row.
TEST(GpuFlatRange, FusedTf32InBlocks) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions options = testing::test_resources_options();
  options.tile_bytes = testing::small_tile_bytes();  // blocks of at most 128 queries
  auto resources = gpu::make_resources(options);
  uint32_t seed = 71;
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    for (int64_t dim : {32, 128}) {
      SCOPED_TRACE(::testing::Message() << metric_name(metric) << " dim " << dim);
      const Problem p = uniform(metric, testing::sized(4097, 1025), dim, testing::sized(300, 140), seed++);
      for (double share : {0.002, 0.3}) {
        SCOPED_TRACE(::testing::Message() << "share " << share);
        const float radius = radius_for(p, share);
        ASSERT_NO_FATAL_FAILURE(expect_same(search(*resources, p, radius), reference(p, radius)));
        const gpu::RangeCallStats stats = gpu::last_range_call_stats();
        EXPECT_TRUE(stats.fused);
        if (share > 0.1) EXPECT_GE(stats.overflows, 1);
      }
      const float radius = radius_for(p, 0.05);
      const Bits bits = random_bits(p.n - 100, seed++);
      ASSERT_NO_FATAL_FAILURE(
          expect_same(search(*resources, p, radius, bits.rows()), reference(p, radius, &bits)));
      const float every = metric == Metric::l2 ? 1e30f : -1e30f;
      const gpu::RangeHits all = search(*resources, p, every);
      for (int64_t q = 0; q < p.nq; ++q) ASSERT_EQ(all.lims[size_t(q + 1)] - all.lims[size_t(q)], p.n);
    }
  }
}

// ---- the "Flat" index on a CUDA context ----------------------------------------------------------

struct Contexts {
  Context cuda{ContextOptions{DeviceKind::cuda, testing::test_device(), 2}};
  Context cpu{ContextOptions{DeviceKind::cpu, 0, 2}};
};

// The index's stored vectors: as given, normalised (as the index does it) for cosine.
std::vector<float> stored(const std::vector<float>& x, int64_t dim, Metric metric) {
  if (metric != Metric::cosine) return x;
  std::vector<float> out(x.size());
  normalize_rows(x.data(), int64_t(x.size()) / dim, dim, out.data());
  return out;
}

gpu::RangeHits as_hits(const RangeResult& r) { return gpu::RangeHits{r.lims, r.ids, r.distances}; }

// The CPU index's result (its own float rounding and order): the same ids per query but for rows
// whose value is within a relative 1e-4 of the radius, distances within 1e-4.
void expect_close(const RangeResult& gpu_result, const RangeResult& cpu_result, const Problem& p,
                  const std::vector<int64_t>& ids, float radius) {
  ASSERT_EQ(gpu_result.lims.size(), cpu_result.lims.size());
  std::vector<int64_t> row_of_id(size_t(*std::max_element(ids.begin(), ids.end()) + 1), -1);
  for (size_t r = 0; r < ids.size(); ++r) row_of_id[size_t(ids[r])] = int64_t(r);
  auto near_boundary = [&](int64_t q, int64_t id) {
    const int64_t row = row_of_id[size_t(id)];
    const double v = testing::exact_value(p.l2(), &p.queries[size_t(q * p.dim)], &p.base[size_t(row * p.dim)], p.dim);
    return std::abs(v - radius) <= 1e-4 * std::max(1.0, std::abs(double(radius)));
  };
  for (int64_t q = 0; q + 1 < int64_t(gpu_result.lims.size()); ++q) {
    std::vector<std::pair<int64_t, float>> g, c;
    for (int64_t i = gpu_result.lims[size_t(q)]; i < gpu_result.lims[size_t(q + 1)]; ++i)
      g.push_back({gpu_result.ids[size_t(i)], gpu_result.distances[size_t(i)]});
    for (int64_t i = cpu_result.lims[size_t(q)]; i < cpu_result.lims[size_t(q + 1)]; ++i)
      c.push_back({cpu_result.ids[size_t(i)], cpu_result.distances[size_t(i)]});
    std::sort(g.begin(), g.end());
    std::sort(c.begin(), c.end());
    size_t i = 0, j = 0;
    while (i < g.size() || j < c.size()) {
      if (j == c.size() || (i < g.size() && g[i].first < c[j].first)) {
        EXPECT_TRUE(near_boundary(q, g[i].first)) << "query " << q << ": id " << g[i].first << " only on the GPU";
        ++i;
      } else if (i == g.size() || c[j].first < g[i].first) {
        EXPECT_TRUE(near_boundary(q, c[j].first)) << "query " << q << ": id " << c[j].first << " only on the CPU";
        ++j;
      } else {
        EXPECT_NEAR(g[i].second, c[j].second, 1e-4f * std::max(1.f, std::abs(c[j].second))) << "query " << q;
        ++i;
        ++j;
      }
    }
  }
}

// An index of `descriptor` on a CUDA context whose range search runs on the device: exact (against
// the float64 reference and the CPU's Flat index), with custom ids, filters, the limit, removals.
void expect_exact_range_search_on_device(const char* descriptor) {
  Contexts contexts;
  const int64_t n = 3001, dim = 45, nq = 37;
  const std::vector<float> x = testing::uniform_vectors(n, dim, 61);
  const std::vector<float> queries = testing::uniform_vectors(nq, dim, 62);
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = 7 + 13 * ((i * 1009) % n);  // distinct, not in row order
  for (Metric metric : {Metric::l2, Metric::inner_product, Metric::cosine}) {
    SCOPED_TRACE(metric_name(metric));
    auto on_gpu = create_index(contexts.cuda, descriptor, dim, metric);
    auto on_cpu = create_index(contexts.cpu, "Flat", dim, metric);
    ASSERT_EQ(on_gpu->device(), DeviceKind::cuda);
    on_gpu->add(n, x.data(), ids.data());
    on_cpu->add(n, x.data(), ids.data());
    Problem p{metric, n, dim, nq, stored(x, dim, metric), stored(queries, dim, metric)};
    const float radius = radius_for(p, 0.03);
    SearchOptions options;
    const RangeResult got = on_gpu->range_search(nq, queries.data(), radius, options);
    ASSERT_NO_FATAL_FAILURE(expect_same(as_hits(got), reference(p, radius, nullptr, &ids)));
    const RangeResult on_cpu_result = on_cpu->range_search(nq, queries.data(), radius, options);
    ASSERT_NO_FATAL_FAILURE(expect_close(got, on_cpu_result, p, ids, radius));

    // Queries in device memory.
    DeviceArray<float> device_queries(queries);
    ASSERT_NO_FATAL_FAILURE(
        expect_same(as_hits(on_gpu->range_search(nq, device_queries.get(), radius, options)), as_hits(got)));

    // A filter by id: the rows whose ids it allows.
    const int64_t max_id = *std::max_element(ids.begin(), ids.end());
    const Bits by_id = random_bits(max_id + 1, 63);
    Bits by_row;
    by_row.nbits = n;
    by_row.bytes.assign(size_t((n + 7) / 8), 0);
    for (int64_t r = 0; r < n; ++r)
      if (by_id.allows(ids[size_t(r)])) by_row.bytes[size_t(r >> 3)] |= uint8_t(1u << (r & 7));
    SearchOptions filtered;
    filtered.filter = IdFilter{by_id.bytes.data(), by_id.nbits};
    ASSERT_NO_FATAL_FAILURE(expect_same(as_hits(on_gpu->range_search(nq, queries.data(), radius, filtered)),
                                        reference(p, radius, &by_row, &ids)));

    // The limit: too_many_results, the index unchanged.
    const int64_t most = most_hits(as_hits(got));
    ASSERT_GT(most, 1);
    SearchOptions limited;
    limited.max_range_results = most - 1;
    try {
      on_gpu->range_search(nq, queries.data(), radius, limited);
      FAIL() << "no error above the limit";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::too_many_results) << e.what();
    }
    EXPECT_EQ(on_gpu->count(), n);
    limited.max_range_results = most;
    ASSERT_NO_FATAL_FAILURE(
        expect_same(as_hits(on_gpu->range_search(nq, queries.data(), radius, limited)), as_hits(got)));

    // Removal renumbers the rows (Flat) or leaves tombstones (Graph); ids stay.
    std::vector<int64_t> removed(ids.begin(), ids.begin() + 100);
    ASSERT_EQ(on_gpu->remove(100, removed.data()), 100);
    Problem rest = p;
    rest.n = n - 100;
    rest.base.erase(rest.base.begin(), rest.base.begin() + 100 * dim);
    const std::vector<int64_t> rest_ids(ids.begin() + 100, ids.end());
    ASSERT_NO_FATAL_FAILURE(expect_same(as_hits(on_gpu->range_search(nq, queries.data(), radius, options)),
                                        reference(rest, radius, nullptr, &rest_ids)));

    // No queries.
    EXPECT_EQ(on_gpu->range_search(0, nullptr, radius, options).lims, std::vector<int64_t>{0});
  }
}

TEST(GpuFlatIndexRange, CustomIdsFiltersRemovalAndLimit) {
  QV_REQUIRE_GPU();
  expect_exact_range_search_on_device("Flat");
}

// The graph index's range search is the exact one over the vectors its device copy holds.
TEST(GpuGraphIndexRange, ExactOverTheDeviceCopyWithFiltersAndTombstones) {
  QV_REQUIRE_GPU();
  expect_exact_range_search_on_device("Graph16");
}

}  // namespace
}  // namespace quiver
