// cuda/metric/sss_batched.*: SSS range search over vectors, a block per tile of queries and rows.
// Its results must equal brute force's exactly (the same rows, in the same order, with the same
// float distances) on every shape the tiles make awkward: rows and queries short of a tile, one
// row, one query, fewer pivots than are bucketed, more than a few load batches; at radius 0, on
// duplicates, with filters, with infinite distances, and when hit buffers overflow and the hits are
// found again. QUIVER_SSS_BATCHED=1 makes every batch take it (0: the one-block-per-query scan).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpp/backend/gpu_metric.h"
#include "cpp/core/error.h"
#include "gpu_testing.h"
#include "row_filters.h"
#include "sanitizer_sizes.h"

namespace quiver::testing {
namespace {

using gpu::MetricMethod;

constexpr float kInf = std::numeric_limits<float>::infinity();

// QUIVER_SSS_BATCHED set for a scope, the previous value back after.
class BatchedSetting {
 public:
  explicit BatchedSetting(const char* value) {
    const char* old = std::getenv(kName);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) setenv(kName, value, 1);
    else unsetenv(kName);
  }
  ~BatchedSetting() {
    if (had_) setenv(kName, old_.c_str(), 1);
    else unsetenv(kName);
  }

 private:
  static constexpr const char* kName = "QUIVER_SSS_BATCHED";
  bool had_ = false;
  std::string old_;
};

double distance(Metric metric, const float* a, const float* b, int64_t dim) {
  double acc = 0;
  for (int64_t d = 0; d < dim; ++d) {
    const double diff = std::fabs(double(a[d]) - double(b[d]));
    if (metric == Metric::l2) acc += diff * diff;
    else if (metric == Metric::l1) acc += diff;
    else acc = std::max(acc, diff);
  }
  return metric == Metric::l2 ? std::sqrt(acc) : acc;
}

// A device space of n vectors with `pivots` pivots spread over the rows (the table in float of the
// double distances, as an index's is within rounding).
struct Space {
  int64_t n = 0, dim = 0;
  std::vector<float> x;
  std::vector<int64_t> pivot_rows;
  std::vector<float> table;
  gpu::MetricDevicePtr device;
};

Space make_space(gpu::Resources& resources, Metric metric, int64_t dim, std::vector<float> x, int64_t pivots) {
  Space s;
  s.dim = dim;
  s.n = int64_t(x.size()) / dim;
  s.x = std::move(x);
  pivots = std::min(pivots, s.n);
  for (int64_t p = 0; p < pivots; ++p) s.pivot_rows.push_back(p * s.n / pivots);
  s.table.resize(size_t(s.n * pivots));
  for (int64_t r = 0; r < s.n; ++r)
    for (int64_t p = 0; p < pivots; ++p)
      s.table[size_t(r * pivots + p)] =
          float(distance(metric, &s.x[size_t(r * dim)], &s.x[size_t(s.pivot_rows[p] * dim)], dim));
  s.device = gpu::make_metric_device(resources, metric, dim);
  const SssBuckets buckets = build_sss_buckets(s.table.data(), s.n, pivots, pivots);
  const gpu::SssTables sss{pivots, s.pivot_rows.data(), s.table.data(), &buckets};
  gpu::metric_upload(resources, *s.device, Objects::of_vectors(s.n, dim, s.x.data()), nullptr, &sss);
  return s;
}

// Queries: copies of a few rows (distance 0 to them), then fresh vectors like the rows.
std::vector<float> queries_of(const Space& s, int64_t nq, uint32_t seed, float scale) {
  std::vector<float> q = uniform_vectors(nq, s.dim, seed, scale);
  for (int64_t i = 0; i < std::min<int64_t>(nq, 3); ++i) {
    const int64_t row = i * s.n / 3;
    std::copy(s.x.begin() + row * s.dim, s.x.begin() + (row + 1) * s.dim, q.begin() + i * s.dim);
  }
  return q;
}

// The radius holding about `fraction` of the rows around query 0.
float quantile_radius(Metric metric, const Space& s, const std::vector<float>& q, double fraction) {
  std::vector<double> d(static_cast<size_t>(s.n));
  for (int64_t r = 0; r < s.n; ++r) d[size_t(r)] = distance(metric, q.data(), &s.x[size_t(r * s.dim)], s.dim);
  std::sort(d.begin(), d.end());
  return float(d[std::min(d.size() - 1, size_t(fraction * double(d.size())))]);
}

using Filter = TestFilter;

gpu::MetricHits range(gpu::Resources& resources, const Space& s, MetricMethod method, const std::vector<float>& q,
                      float radius, const Filter& filter, int64_t cap = 0) {
  const Objects queries = Objects::of_vectors(int64_t(q.size()) / s.dim, s.dim, q.data());
  return gpu::metric_range_search(resources, *s.device, method, queries, radius, filter.view(), cap);
}

// The batched SSS scan (forced on) against brute force: equal; each query's distances computed at
// least its pivots and hits, at most its pivots and every row.
void expect_batched_equals_brute_force(gpu::Resources& resources, const Space& s, const std::vector<float>& q,
                                       float radius, const Filter& filter, const std::string& what) {
  const gpu::MetricHits brute = range(resources, s, MetricMethod::brute_force, q, radius, filter);
  BatchedSetting batched("1");
  const gpu::MetricHits hits = range(resources, s, MetricMethod::sss, q, radius, filter);
  ASSERT_EQ(hits.lims, brute.lims) << what;
  EXPECT_EQ(hits.rows, brute.rows) << what;
  EXPECT_EQ(hits.distances, brute.distances) << what;
  const int64_t pivots = int64_t(s.pivot_rows.size());
  for (size_t i = 0; i + 1 < hits.lims.size(); ++i) {
    EXPECT_GE(hits.evaluations[i], pivots + hits.lims[i + 1] - hits.lims[i]) << what << " query " << i;
    EXPECT_LE(hits.evaluations[i], pivots + s.n) << what << " query " << i;
  }
}

TEST(GpuSssBatched, EqualsBruteForceOnAwkwardShapes) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  struct Shape {
    int64_t n, dim, pivots, nq;
  };
  // Tiles are 256 queries (round 1 in parts of 64, the list flushed when a part might not fit) x 128
  // rows; 16 pivots bucketed, 8 table entries loaded at once. Dimension 130 takes teams of 32
  // lanes, 3 of 1.
  const Shape shapes[] = {{1, 3, 1, 1},          {127, 5, 3, 63},       {128, 8, 4, 64},
                          {129, 17, 5, 65},      {1000, 130, 12, 17},   {sized(3001, 700), 7, 13, sized(300, 70)},
                          {sized(5003, 900), 33, 40, sized(130, 66)}};
  for (Metric metric : {Metric::l2, Metric::l1, Metric::linf}) {
    for (const Shape& sh : shapes) {
      const Space s = make_space(resources, metric, sh.dim, uniform_vectors(sh.n, sh.dim, uint32_t(sh.n * 7 + sh.dim)),
                                 sh.pivots);
      const std::vector<float> q = queries_of(s, sh.nq, uint32_t(sh.nq + 11), 1.0f);
      const Filter filters[] = {Filter{}, random_filter(s.n, 0.6, 5), random_filter(s.n * 2 / 3, 0.9, 6)};
      for (const Filter& filter : filters) {
        if (skip_under_sanitizer(&filter == &filters[1])) continue;
        for (float radius : {0.0f, quantile_radius(metric, s, q, 0.002), quantile_radius(metric, s, q, 0.05),
                             quantile_radius(metric, s, q, 0.5), 1e30f, kInf}) {
          expect_batched_equals_brute_force(resources, s, q, radius, filter,
                                            std::string(metric_name(metric)) + " n " + std::to_string(sh.n) + " dim " +
                                                std::to_string(sh.dim) + " pivots " + std::to_string(sh.pivots) +
                                                " nq " + std::to_string(sh.nq) + " radius " + std::to_string(radius) +
                                                (filter.on ? " filtered to " + std::to_string(filter.nbits) : ""));
        }
      }
    }
  }
}

// Small integers: distances are exact in float, so ties and duplicates (rows repeated, queries that
// are rows) are exact, at radius 0 and at the ties' own distances.
TEST(GpuSssBatched, DuplicatesAndTiesAreExact) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  for (Metric metric : {Metric::l2, Metric::l1, Metric::linf}) {
    const int64_t n = sized(1500, 400), dim = 6;
    std::vector<float> x = integer_vectors(n, dim, uint32_t(int(metric) + 3), 2);
    for (int64_t r = 0; r < n / 10; ++r)  // a tenth of the rows repeat earlier ones
      std::copy(x.begin() + (r * 3) * dim, x.begin() + (r * 3 + 1) * dim, x.begin() + (n - 1 - r) * dim);
    const Space s = make_space(resources, metric, dim, x, 20);
    std::vector<float> q = integer_vectors(70, dim, 77, 2);
    std::copy(x.begin(), x.begin() + 5 * dim, q.begin());
    for (float radius : {0.0f, 1.0f, 2.0f, 3.0f})
      expect_batched_equals_brute_force(
          resources, s, q, radius, Filter{},
          std::string("integers ") + metric_name(metric) + " radius " + std::to_string(radius));
  }
}

// Rows far out (components of 1e20): their L2 distances overflow to +inf, in the pivot table too.
// An infinite table entry prunes nothing, so at an infinite radius every row is found.
TEST(GpuSssBatched, InfiniteDistancesArePrunedLikeTheScan) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  const int64_t n = 300, dim = 4;
  std::vector<float> x = uniform_vectors(n, dim, 91);
  for (int64_t r = 5; r < n; r += 7)
    for (int64_t d = 0; d < dim; ++d) x[size_t(r * dim + d)] *= 1e20f;
  const Space s = make_space(resources, Metric::l2, dim, x, 6);
  std::vector<float> q = queries_of(s, 40, 92, 1.0f);
  std::copy(x.begin() + 5 * dim, x.begin() + 6 * dim, q.begin() + 3 * dim);  // a query far out itself
  for (float radius : {0.0f, 0.5f, 1e30f, kInf})
    expect_batched_equals_brute_force(resources, s, q, radius, Filter{}, "far rows radius " + std::to_string(radius));
}

// A tiny tile budget: buffers of 64 hits a query, which a large radius overflows; those queries'
// hits are found again (the count went on past the buffer). The cap still names the query.
TEST(GpuSssBatched, FullBuffersAreFoundAgain) {
  QV_REQUIRE_GPU();
  gpu::ResourcesPtr small = make_test_resources(64 << 10);
  gpu::Resources& resources = shared_resources();
  const int64_t n = sized(2000, 600), dim = 5;
  const std::vector<float> x = uniform_vectors(n, dim, 31);
  const Space s = make_space(resources, Metric::l2, dim, x, 16);
  const Space small_space = make_space(*small, Metric::l2, dim, x, 16);
  const std::vector<float> q = queries_of(s, sized(150, 70), 32, 1.0f);
  const Filter filter = random_filter(n, 0.8, 33);
  for (float radius : {quantile_radius(Metric::l2, s, q, 0.01), quantile_radius(Metric::l2, s, q, 0.3)}) {
    const gpu::MetricHits brute = range(resources, s, MetricMethod::brute_force, q, radius, filter);
    ASSERT_GT(brute.lims.back(), 64 * 10) << "the radius should overflow some buffers of 64";
    BatchedSetting batched("1");
    const gpu::MetricHits hits = range(*small, small_space, MetricMethod::sss, q, radius, filter);
    EXPECT_EQ(hits.lims, brute.lims) << radius;
    EXPECT_EQ(hits.rows, brute.rows) << radius;
    EXPECT_EQ(hits.distances, brute.distances) << radius;
  }
  BatchedSetting batched("1");
  try {
    range(*small, small_space, MetricMethod::sss, q, kInf, Filter{}, n - 1);
    ADD_FAILURE() << "no error above the cap";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::too_many_results);
    EXPECT_NE(std::string(e.what()).find("query 0"), std::string::npos) << e.what();
  }
}

// Without the setting, small batches take the one-block-per-query scan and large ones the batched
// scan, in tiles of 16384 queries (kBatchedTileQueries); every one equals brute force.
TEST(GpuSssBatched, EveryBatchSizeEqualsBruteForce) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  BatchedSetting automatic(nullptr);
  const int64_t n = sized(4000, 900), dim = 16;
  const Space s = make_space(resources, Metric::l2, dim, clustered_vectors(n, dim, 20, 51), 30);
  const std::vector<float> all = queries_of(s, 100, 52, 10.0f);
  for (int64_t nq : {1, 15, 16, 100}) {
    const std::vector<float> q(all.begin(), all.begin() + nq * dim);
    for (float radius : {quantile_radius(Metric::l2, s, q, 0.001), quantile_radius(Metric::l2, s, q, 0.05)}) {
      const gpu::MetricHits brute = range(resources, s, MetricMethod::brute_force, q, radius, Filter{});
      const gpu::MetricHits hits = range(resources, s, MetricMethod::sss, q, radius, Filter{});
      EXPECT_EQ(hits.lims, brute.lims) << nq;
      EXPECT_EQ(hits.rows, brute.rows) << nq;
      EXPECT_EQ(hits.distances, brute.distances) << nq;
    }
  }
  if (sanitizer_sizes()) return;  // the tiles' code runs above; this adds only their number
  const Space few_rows = make_space(resources, Metric::l2, 4, uniform_vectors(300, 4, 53), 6);
  const std::vector<float> q = queries_of(few_rows, 16384 + 7, 54, 1.0f);
  const float radius = quantile_radius(Metric::l2, few_rows, q, 0.02);
  const gpu::MetricHits brute = range(resources, few_rows, MetricMethod::brute_force, q, radius, Filter{});
  const gpu::MetricHits hits = range(resources, few_rows, MetricMethod::sss, q, radius, Filter{});
  EXPECT_EQ(hits.lims, brute.lims);
  EXPECT_EQ(hits.rows, brute.rows);
  EXPECT_EQ(hits.distances, brute.distances);
}

}  // namespace
}  // namespace quiver::testing
