// cpp/metric/sss_buckets.*: SSS's bucketed pivot distances. For every interval, the rows kept for
// its buckets must be exactly the rows whose bucket lies between the interval's ends, plus the wild
// (non-finite) ones, so every row whose distance lies in the interval is kept (the filter is
// conservative), after a build and after the table grows. And an SSS index, which filters through
// them, must answer range and k-NN searches exactly as brute force and List of Clusters do: after
// inserts in batches, removals, with far-out rows, at radius 0 and infinity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpp/core/context.h"
#include "cpp/index/factory.h"
#include "cpp/metric/objects.h"
#include "cpp/metric/query_distance.h"
#include "cpp/metric/sss_buckets.h"

namespace quiver {
namespace {

using namespace sss_buckets;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Pivot p's column of a row-major table with awkward values: duplicates (every third pivot),
// infinities, NaNs, and pivot 2 without a finite entry.
std::vector<float> awkward_table(int64_t rows, int64_t pivots, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(0.0f, 100.0f);
  std::vector<float> table(static_cast<size_t>(rows * pivots));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < pivots; ++p) {
      float v = p % 3 == 1 ? std::round(uniform(rng) / 10.0f) : uniform(rng);
      if (r % 37 == 5) v = kInf;
      if (r % 53 == 7) v = std::numeric_limits<float>::quiet_NaN();
      if (p == 2) v = kInf;
      table[size_t(r * pivots + p)] = v;
    }
  return table;
}

// The rows kept for intervals between many ends, against the definition, pivot by pivot.
void check_buckets(const SssBuckets& buckets, const std::vector<float>& table, int64_t rows, int64_t stride) {
  ASSERT_EQ(buckets.rows, rows);
  ASSERT_EQ(int64_t(buckets.bits.size()), buckets.pivots * (kBuckets + 1) * buckets.words());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(0.0f, 100.0f);
  for (int64_t p = 0; p < buckets.pivots; ++p) {
    const float* edges = buckets.edges.data() + p * kEdges;
    for (int e = 1; e < kEdges; ++e) ASSERT_LE(edges[e - 1], edges[e]) << "pivot " << p;
    std::vector<float> ends{-kInf, kInf, 0.0f, 5.0f, edges[3], edges[20], 50.0f, 99.9f};
    for (int i = 0; i < 8; ++i) ends.push_back(uniform(rng));
    for (float lo : ends)
      for (float hi : ends) {
        const int blo = bucket_of(edges, lo), bhi = bucket_of(edges, hi);
        for (int64_t w = 0; w < buckets.words(); ++w) {
          uint32_t kept = ~0u;
          buckets.keep(p, blo, bhi, w, 1, &kept);
          for (int bit = 0; bit < 32; ++bit) {
            const int64_t row = w * 32 + bit;
            const bool is_kept = (kept >> bit) & 1u;
            if (row >= rows) {
              ASSERT_FALSE(is_kept) << "row " << row << " past the end";
              continue;
            }
            const float t = table[size_t(row * stride + p)];
            const int bucket = bucket_of(edges, t);
            ASSERT_EQ(is_kept, !std::isfinite(t) || (blo <= bucket && bucket <= bhi))
                << "rows " << rows << " pivot " << p << " row " << row << " t " << t << " [" << lo << ", " << hi
                << "]";
            if (std::isfinite(t) && lo <= t && t <= hi) ASSERT_TRUE(is_kept) << "dropped a row in the interval";
          }
        }
      }
  }
}

TEST(SssBuckets, KeptRowsAreThoseOfTheIntervalsBuckets) {
  for (int64_t rows : {0, 1, 31, 128, 300}) {
    const int64_t pivots = 20;
    const std::vector<float> table = awkward_table(rows, pivots, uint32_t(rows));
    const SssBuckets buckets = build_sss_buckets(table.data(), rows, pivots, pivots);
    EXPECT_EQ(buckets.pivots, kPivots);
    check_buckets(buckets, table, rows, pivots);
  }
  // Fewer pivots than are bucketed, a stride wider than them.
  const std::vector<float> table = awkward_table(70, 5, 9);
  const SssBuckets buckets = build_sss_buckets(table.data(), 70, 3, 5);
  EXPECT_EQ(buckets.pivots, 3);
  check_buckets(buckets, table, 70, 5);
}

TEST(SssBuckets, GrownTablesKeepTheDefinition) {
  const int64_t pivots = 18;
  const std::vector<float> table = awkward_table(700, pivots, 5);
  SssBuckets buckets = build_sss_buckets(table.data(), 100, pivots, pivots);
  for (int64_t rows : {101, 150, 200, 201, 256, 300, 700}) {
    const std::vector<float> edges_before = buckets.edges;
    const int64_t edge_rows_before = buckets.edge_rows;
    buckets = grown_sss_buckets(buckets, table.data(), rows, pivots);
    // The edges stay until the table has doubled since they were cut.
    EXPECT_EQ(buckets.edges == edges_before, rows <= 2 * edge_rows_before) << rows;
    check_buckets(buckets, table, rows, pivots);
  }
}

// Rows of a low-dimensional Gaussian mapped into dim components (as bench/metric's synthetic set),
// a few of them far out (1e17: buckets of very unequal widths), some duplicated.
std::vector<float> vectors(int64_t n, int64_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> map(size_t(3 * dim));
  for (float& v : map) v = g(rng);
  std::vector<float> x(size_t(n * dim));
  for (int64_t i = 0; i < n; ++i) {
    const float z[3] = {g(rng), g(rng), g(rng)};
    for (int64_t j = 0; j < dim; ++j)
      x[size_t(i * dim + j)] = z[0] * map[j] + z[1] * map[dim + j] + z[2] * map[2 * dim + j] + 0.05f * g(rng);
  }
  for (int64_t i = 7; i < n; i += 97) std::copy_n(&x[size_t((i - 1) * dim)], dim, &x[size_t(i * dim)]);
  for (int64_t i = 11; i < n; i += 301) x[size_t(i * dim)] = 1e17f;
  return x;
}

TEST(SssBuckets, SssSearchesEqualBruteForceAndListOfClusters) {
  Context cpu{ContextOptions{DeviceKind::cpu, 0, 2}};
  const int64_t n = 1300, nq = 23;
  for (Metric metric : {Metric::l2, Metric::l1, Metric::linf}) {
    for (int64_t dim : {int64_t(5), int64_t(40)}) {
      const std::vector<float> x = vectors(n, dim, uint32_t(dim));
      std::vector<float> q = vectors(nq, dim, uint32_t(dim + 1));
      std::copy_n(x.begin(), 2 * dim, q.begin());  // two queries that are rows
      auto sss = create_index(cpu, "SSS0.3", dim, metric);
      auto lc = create_index(cpu, "LC16", dim, metric);
      // Inserts in batches (the buckets grow, and are cut anew), then removals.
      for (int64_t first = 0; first < n; first += first == 0 ? 400 : 150) {
        const int64_t count = std::min<int64_t>(first == 0 ? 400 : 150, n - first);
        sss->add(count, &x[size_t(first * dim)], nullptr);
        lc->add(count, &x[size_t(first * dim)], nullptr);
      }
      std::vector<int64_t> gone;
      for (int64_t id = 3; id < n; id += 17) gone.push_back(id);
      sss->remove(int64_t(gone.size()), gone.data());
      lc->remove(int64_t(gone.size()), gone.data());
      // Radii at quantiles of one query's distances, in the caller's units (squared for L2).
      const Objects base = Objects::of_vectors(n, dim, x.data()), queries = Objects::of_vectors(nq, dim, q.data());
      const QueryDistance third(metric, queries, 3);
      std::vector<float> typical;
      for (int64_t r = 0; r < n; ++r) typical.push_back(third(base, r));
      std::sort(typical.begin(), typical.end());
      for (float d : {0.0f, typical[5], typical[n / 20], typical[n / 3], kInf}) {
        const float radius = metric == Metric::l2 ? d * d : d;
        const std::string what = std::string(metric_name(metric)) + " dim " + std::to_string(dim) + " radius " +
                                 std::to_string(radius);
        const RangeResult a = sss->range_search(nq, q.data(), radius, SearchOptions{});
        const RangeResult b = lc->range_search(nq, q.data(), radius, SearchOptions{});
        ASSERT_EQ(a.lims, b.lims) << what;
        ASSERT_EQ(a.ids, b.ids) << what;
        ASSERT_EQ(a.distances, b.distances) << what;
        if (metric == Metric::l2) continue;  // the caller's units are squared: LC is the reference
        for (int64_t query = 0; query < nq; ++query) {
          const QueryDistance distance(metric, queries, query);
          int64_t expected = 0;
          for (int64_t id = 0; id < n; ++id)
            if (!std::binary_search(gone.begin(), gone.end(), id) && distance(base, id) <= radius) ++expected;
          EXPECT_EQ(a.lims[size_t(query + 1)] - a.lims[size_t(query)], expected) << what << " query " << query;
        }
      }
      // k-NN through the buckets of a shrinking radius: the same neighbours as List of Clusters'.
      for (int64_t k : {1, 10, 60}) {
        std::vector<float> da(size_t(nq * k)), db(size_t(nq * k));
        std::vector<int64_t> ia(size_t(nq * k)), ib(size_t(nq * k));
        sss->search(nq, q.data(), k, SearchOptions{}, da.data(), ia.data());
        lc->search(nq, q.data(), k, SearchOptions{}, db.data(), ib.data());
        EXPECT_EQ(ia, ib) << metric_name(metric) << " dim " << dim << " k " << k;
        EXPECT_EQ(da, db) << metric_name(metric) << " dim " << dim << " k " << k;
      }
    }
  }
}

}  // namespace
}  // namespace quiver
