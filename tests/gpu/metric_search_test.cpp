// gpu_metric.h (cuda/metric/): brute force, List of Clusters and SSS range and k-NN search over float
// vectors (L2, L1, L-infinity) and byte strings (edit distance). References: distances in double
// (vectors) and a plain DP (strings), computed here. Brute force is checked against them (exactly
// for strings and small-integer vectors, whose float distances are exact; within float rounding for
// real vectors); List of Clusters and SSS must then equal brute force exactly: the same rows, in the
// same order, with the same float distances. The tables are built here by small, plain builders
// that satisfy gpu_metric.h's invariants.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
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
constexpr MetricMethod kMethods[] = {MetricMethod::brute_force, MetricMethod::list_of_clusters, MetricMethod::sss};

// ---- objects ---------------------------------------------------------------------------------------

struct Space {
  int64_t dim = 0;  // 0: strings
  std::vector<float> x;
  std::vector<int64_t> offsets{0};
  std::vector<uint8_t> bytes;

  int64_t size() const { return dim > 0 ? int64_t(x.size()) / dim : int64_t(offsets.size()) - 1; }
  Objects objects() const {
    if (dim > 0) return Objects::of_vectors(size(), dim, x.data());
    return Objects::of_strings(Strings{size(), offsets.data(), bytes.data()});
  }
  void push(const std::vector<uint8_t>& s) {
    bytes.insert(bytes.end(), s.begin(), s.end());
    offsets.push_back(int64_t(bytes.size()));
  }
  std::vector<uint8_t> string(int64_t i) const {
    return std::vector<uint8_t>(bytes.begin() + offsets[i], bytes.begin() + offsets[i + 1]);
  }
};

Space vectors(int64_t dim, std::vector<float> x) {
  Space s;
  s.dim = dim;
  s.x = std::move(x);
  return s;
}

int64_t edit_dp(const uint8_t* a, int64_t na, const uint8_t* b, int64_t nb) {
  std::vector<int64_t> prev(size_t(nb + 1)), cur(size_t(nb + 1));
  std::iota(prev.begin(), prev.end(), int64_t(0));
  for (int64_t i = 1; i <= na; ++i) {
    cur[0] = i;
    for (int64_t j = 1; j <= nb; ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
    std::swap(prev, cur);
  }
  return prev[size_t(nb)];
}

// The true distance between a's object i and b's object j, in double.
double distance(Metric metric, const Space& a, int64_t i, const Space& b, int64_t j) {
  if (metric == Metric::edit)
    return double(edit_dp(a.bytes.data() + a.offsets[i], a.offsets[i + 1] - a.offsets[i], b.bytes.data() + b.offsets[j],
                          b.offsets[j + 1] - b.offsets[j]));
  const float* p = &a.x[size_t(i * a.dim)];
  const float* q = &b.x[size_t(j * b.dim)];
  double acc = 0;
  for (int64_t d = 0; d < a.dim; ++d) {
    const double diff = std::fabs(double(p[d]) - double(q[d]));
    if (metric == Metric::l2) acc += diff * diff;
    else if (metric == Metric::l1) acc += diff;
    else acc = std::max(acc, diff);
  }
  return metric == Metric::l2 ? std::sqrt(acc) : acc;
}

// distances[q][row]
using Matrix = std::vector<std::vector<double>>;

Matrix distance_matrix(Metric metric, const Space& queries, const Space& space) {
  Matrix m(size_t(queries.size()), std::vector<double>(size_t(space.size())));
  for (int64_t q = 0; q < queries.size(); ++q)
    for (int64_t r = 0; r < space.size(); ++r) m[q][r] = distance(metric, queries, q, space, r);
  return m;
}

// ---- tables ------------------------------------------------------------------------------------------

using Distance = std::function<double(int64_t, int64_t)>;

// List of Clusters: farthest-first centres (the remaining object farthest from every earlier centre),
// each taking the `bucket` nearest remaining objects; radius = the farthest member. What is left for
// later clusters is then never closer to a centre than its radius.
struct LcBuilt {
  std::vector<int64_t> centres, begin{0}, members;
  std::vector<float> radii;
  gpu::LcTables view() const {
    return gpu::LcTables{int64_t(centres.size()), centres.data(), radii.data(), begin.data(), members.data()};
  }
};

LcBuilt build_lc(int64_t n, int64_t bucket, const Distance& d) {
  LcBuilt lc;
  std::vector<bool> left(size_t(n), true);
  std::vector<double> nearest_centre(size_t(n), std::numeric_limits<double>::infinity());
  int64_t remaining = n, centre = 0;
  while (remaining > 0) {
    left[centre] = false;
    --remaining;
    std::vector<std::pair<double, int64_t>> by_distance;
    for (int64_t r = 0; r < n; ++r)
      if (left[r]) by_distance.push_back({d(centre, r), r});
    std::sort(by_distance.begin(), by_distance.end());
    const int64_t take = std::min<int64_t>(bucket, int64_t(by_distance.size()));
    double radius = 0;
    for (int64_t i = 0; i < take; ++i) {
      lc.members.push_back(by_distance[i].second);
      left[by_distance[i].second] = false;
      radius = std::max(radius, by_distance[i].first);
    }
    remaining -= take;
    lc.centres.push_back(centre);
    lc.radii.push_back(float(radius));
    lc.begin.push_back(int64_t(lc.members.size()));
    int64_t next = -1;
    for (int64_t i = take; i < int64_t(by_distance.size()); ++i) {
      const int64_t r = by_distance[i].second;
      nearest_centre[r] = std::min(nearest_centre[r], by_distance[i].first);
      if (next < 0 || nearest_centre[r] > nearest_centre[next] ||
          (nearest_centre[r] == nearest_centre[next] && r < next))
        next = r;
    }
    centre = next;
  }
  return lc;
}

struct SssBuilt {
  std::vector<int64_t> pivots;
  std::vector<float> table;
  SssBuckets buckets;  // of the table, as an index keeps them (the batched scan's first filter)
  gpu::SssTables view() const {
    return gpu::SssTables{int64_t(pivots.size()), pivots.data(), table.data(), &buckets};
  }
};

// `count` pivots spread over the rows.
SssBuilt build_sss(int64_t n, int64_t count, const Distance& d) {
  SssBuilt sss;
  count = std::min(count, n);
  for (int64_t p = 0; p < count; ++p) sss.pivots.push_back(p * n / count);
  sss.table.resize(size_t(n * count));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t p = 0; p < count; ++p) sss.table[size_t(r * count + p)] = float(d(r, sss.pivots[p]));
  sss.buckets = build_sss_buckets(sss.table.data(), n, count, count);
  return sss;
}

// A device copy of a space with both methods' tables.
struct Index {
  LcBuilt lc;
  SssBuilt sss;
  gpu::MetricDevicePtr device;
};

Index make_index(gpu::Resources& resources, Metric metric, const Space& space, int64_t bucket, int64_t pivots) {
  Index index;
  const Distance d = [&](int64_t i, int64_t j) { return distance(metric, space, i, space, j); };
  index.lc = build_lc(space.size(), bucket, d);
  index.sss = build_sss(space.size(), pivots, d);
  index.device = gpu::make_metric_device(resources, metric, space.dim);
  const gpu::LcTables lc = index.lc.view();
  const gpu::SssTables sss = index.sss.view();
  gpu::metric_upload(resources, *index.device, space.objects(), &lc, &sss);
  return index;
}

// ---- filters and searches ----------------------------------------------------------------------------

using Filter = TestFilter;

struct Knn {
  std::vector<float> distances;
  std::vector<int64_t> rows;
};

Knn knn(gpu::Resources& resources, const gpu::MetricDevice& device, MetricMethod method, const Space& queries,
        int64_t k, const Filter& filter) {
  Knn out{std::vector<float>(size_t(queries.size() * k)), std::vector<int64_t>(size_t(queries.size() * k))};
  gpu::metric_knn(resources, device, method, queries.objects(), k, filter.view(), out.distances.data(),
                  out.rows.data());
  return out;
}

gpu::MetricHits range(gpu::Resources& resources, const gpu::MetricDevice& device, MetricMethod method,
                      const Space& queries, float radius, const Filter& filter, int64_t cap = 0) {
  return gpu::metric_range_search(resources, device, method, queries.objects(), radius, filter.view(), cap);
}

const char* method_name(MetricMethod m) {
  return m == MetricMethod::brute_force ? "brute force" : m == MetricMethod::list_of_clusters ? "LC" : "SSS";
}

// ---- checks ------------------------------------------------------------------------------------------

// Relative rounding of a float distance of up to a few hundred components, with room.
constexpr double kTolerance = 3e-5;

bool near(double got, double want) { return std::fabs(got - want) <= kTolerance * (std::fabs(want) + 1e-3); }

// Brute force's hits against the reference (L2 hits carry squared distances: their roots are
// compared). exact: the float of the true distance is what the GPU finds (strings, small integers);
// else near-boundary rows may go either way.
void expect_range_matches(Metric metric, const gpu::MetricHits& hits, const Matrix& d, float radius,
                          const Filter& filter, bool exact, const std::string& what) {
  const int64_t nq = int64_t(d.size());
  ASSERT_EQ(int64_t(hits.lims.size()), nq + 1) << what;
  ASSERT_EQ(hits.lims.back(), int64_t(hits.rows.size())) << what;
  ASSERT_EQ(hits.rows.size(), hits.distances.size()) << what;
  for (int64_t q = 0; q < nq; ++q) {
    std::vector<bool> found(d[q].size(), false);
    for (int64_t i = hits.lims[q]; i < hits.lims[q + 1]; ++i) {
      const int64_t row = hits.rows[i];
      ASSERT_TRUE(row >= 0 && row < int64_t(d[q].size())) << what << " query " << q << " row " << row;
      EXPECT_TRUE(filter.allows(row)) << what << " query " << q << " row " << row << " is filtered out";
      EXPECT_FALSE(found[row]) << what << " query " << q << " row " << row << " twice";
      found[row] = true;
      if (i > hits.lims[q])
        EXPECT_TRUE(hits.distances[i - 1] < hits.distances[i] ||
                    (hits.distances[i - 1] == hits.distances[i] && hits.rows[i - 1] < row))
            << what << " query " << q << " hits out of order at " << i;
      const double got = metric == Metric::l2 ? std::sqrt(double(hits.distances[i])) : double(hits.distances[i]);
      if (exact) {
        EXPECT_LE(float(got), radius) << what << " query " << q << " row " << row;
        EXPECT_EQ(float(got), float(d[q][row])) << what << " query " << q << " row " << row;
      } else {
        EXPECT_LE(got, double(radius) * (1 + kTolerance)) << what << " query " << q << " row " << row;
        EXPECT_TRUE(near(got, d[q][row])) << what << " query " << q << " row " << row << ": " << got << " vs "
                                          << d[q][row];
      }
    }
    for (int64_t row = 0; row < int64_t(d[q].size()); ++row) {
      if (!filter.allows(row) || found[row]) continue;
      const bool inside = exact ? float(d[q][row]) <= radius : d[q][row] <= double(radius) * (1 - kTolerance) - 1e-6;
      EXPECT_FALSE(inside) << what << " query " << q << " misses row " << row << " at " << d[q][row] << " <= "
                           << radius;
    }
  }
}

void expect_knn_matches(const Knn& got, const Matrix& d, int64_t k, const Filter& filter, bool exact,
                        const std::string& what) {
  for (int64_t q = 0; q < int64_t(d.size()); ++q) {
    std::vector<std::pair<double, int64_t>> want;
    for (int64_t row = 0; row < int64_t(d[q].size()); ++row)
      if (filter.allows(row)) want.push_back({exact ? double(float(d[q][row])) : d[q][row], row});
    std::sort(want.begin(), want.end());
    std::vector<bool> seen(d[q].size(), false);
    for (int64_t j = 0; j < k; ++j) {
      const float dist = got.distances[q * k + j];
      const int64_t row = got.rows[q * k + j];
      if (j >= int64_t(want.size())) {
        EXPECT_EQ(row, -1) << what << " query " << q << " slot " << j;
        EXPECT_EQ(dist, kInf) << what << " query " << q << " slot " << j;
        continue;
      }
      ASSERT_TRUE(row >= 0 && row < int64_t(d[q].size())) << what << " query " << q << " slot " << j << " row " << row;
      EXPECT_TRUE(filter.allows(row)) << what << " query " << q << " row " << row << " is filtered out";
      EXPECT_FALSE(seen[row]) << what << " query " << q << " row " << row << " twice";
      seen[row] = true;
      if (j > 0)
        EXPECT_TRUE(got.distances[q * k + j - 1] < dist ||
                    (got.distances[q * k + j - 1] == dist && got.rows[q * k + j - 1] < row))
            << what << " query " << q << " out of order at " << j;
      if (exact) {
        EXPECT_EQ(row, want[j].second) << what << " query " << q << " slot " << j;
        EXPECT_EQ(dist, float(want[j].first)) << what << " query " << q << " slot " << j;
      } else {
        EXPECT_TRUE(near(dist, want[j].first))
            << what << " query " << q << " slot " << j << ": " << dist << " vs " << want[j].first;
        EXPECT_TRUE(near(dist, d[q][row])) << what << " query " << q << " row " << row;
      }
    }
  }
}

void expect_same_hits(const gpu::MetricHits& got, const gpu::MetricHits& want, const std::string& what) {
  EXPECT_EQ(got.lims, want.lims) << what;
  EXPECT_EQ(got.rows, want.rows) << what;
  EXPECT_EQ(got.distances, want.distances) << what;
}

void expect_same_knn(const Knn& got, const Knn& want, const std::string& what) {
  EXPECT_EQ(got.rows, want.rows) << what;
  EXPECT_EQ(got.distances, want.distances) << what;
}

// The q-quantile of the distances of query 0 (a radius with about that fraction of hits).
float quantile_radius(const Matrix& d, double fraction) {
  std::vector<double> all = d[0];
  std::sort(all.begin(), all.end());
  return float(all[std::min(all.size() - 1, size_t(fraction * double(all.size())))]);
}

// Queries: copies of some rows (duplicates: distance 0) and fresh vectors.
Space vector_queries(const Space& space, int64_t fresh, uint32_t seed) {
  Space q;
  q.dim = space.dim;
  const int64_t copies = std::min<int64_t>(space.size(), 5);
  for (int64_t i = 0; i < copies; ++i) {
    const int64_t row = i * space.size() / copies;
    q.x.insert(q.x.end(), space.x.begin() + row * space.dim, space.x.begin() + (row + 1) * space.dim);
  }
  const std::vector<float> extra = uniform_vectors(fresh, space.dim, seed);
  q.x.insert(q.x.end(), extra.begin(), extra.end());
  return q;
}

// Range and k-NN of every method on one space: brute force against the reference, the indexes
// against brute force.
void check_space(Metric metric, const Space& space, const Space& queries, bool exact, int64_t bucket,
                 int64_t pivots, const std::vector<float>& radii, const std::vector<int64_t>& ks,
                 const std::string& name) {
  gpu::Resources& resources = shared_resources();
  Index index = make_index(resources, metric, space, bucket, pivots);
  ASSERT_EQ(gpu::metric_rows(*index.device), space.size());
  EXPECT_GT(gpu::metric_device_bytes(*index.device), 0);
  const Matrix d = distance_matrix(metric, queries, space);
  const Filter filters[] = {Filter{}, random_filter(space.size(), 0.6, 7), random_filter(space.size() * 2 / 3, 0.9, 8)};
  for (int f = 0; f < 3; ++f) {
    // Filter 1 (bits over every row) runs the code of filter 2 (bits that stop before the last rows).
    if (skip_under_sanitizer(f == 1)) continue;
    const Filter& filter = filters[f];
    for (float radius : radii) {
      const std::string what = name + " radius " + std::to_string(radius) + " filter " + std::to_string(f);
      const gpu::MetricHits brute = range(resources, *index.device, MetricMethod::brute_force, queries, radius, filter);
      expect_range_matches(metric, brute, d, radius, filter, exact, what + " brute force");
      for (int64_t q = 0; q < queries.size() && f == 0; ++q)
        EXPECT_EQ(brute.evaluations[q], space.size()) << what << " query " << q;
      for (MetricMethod m : {MetricMethod::list_of_clusters, MetricMethod::sss}) {
        const gpu::MetricHits hits = range(resources, *index.device, m, queries, radius, filter);
        expect_same_hits(hits, brute, what + " " + method_name(m));
        const int64_t fixed = m == MetricMethod::list_of_clusters ? int64_t(index.lc.centres.size())
                                                                  : int64_t(index.sss.pivots.size());
        for (int64_t q = 0; q < queries.size(); ++q) {
          EXPECT_GE(hits.evaluations[q], fixed) << what << " " << method_name(m) << " query " << q;
          EXPECT_LE(hits.evaluations[q], fixed + space.size()) << what << " " << method_name(m) << " query " << q;
        }
      }
    }
    for (int64_t k : ks) {
      const std::string what = name + " k " + std::to_string(k) + " filter " + std::to_string(f);
      const Knn brute = knn(resources, *index.device, MetricMethod::brute_force, queries, k, filter);
      expect_knn_matches(brute, d, k, filter, exact, what + " brute force");
      for (MetricMethod m : {MetricMethod::list_of_clusters, MetricMethod::sss})
        expect_same_knn(knn(resources, *index.device, m, queries, k, filter), brute, what + " " + method_name(m));
    }
  }
}

// ---- vectors -----------------------------------------------------------------------------------------

TEST(GpuMetricSearch, VectorsEveryMethodEqualsBruteForce) {
  QV_REQUIRE_GPU();
  struct Shape {
    int64_t n, dim, bucket, pivots;
  };
  const Shape shapes[] = {{1, 1, 4, 1}, {2, 3, 1, 2}, {33, 17, 4, 3}, {1000, 130, 32, 8}, {5003, 3, 16, 4}};
  for (Metric metric : {Metric::l2, Metric::l1, Metric::linf}) {
    for (const Shape& s : shapes) {
      const Space space = vectors(s.dim, uniform_vectors(s.n, s.dim, uint32_t(s.n * 31 + s.dim)));
      const Space queries = vector_queries(space, s.n > 1000 ? 20 : 10, uint32_t(s.n + 5));
      const Matrix d = distance_matrix(metric, queries, space);
      const std::vector<float> radii = {0.0f, quantile_radius(d, 0.01), quantile_radius(d, 0.2), 1e30f};
      std::vector<int64_t> ks = {1, 7, 2048};
      for (int64_t k : {s.n, s.n + 5})
        if (k <= 2048) ks.push_back(k);
      check_space(metric, space, queries, false, s.bucket, s.pivots, radii, ks,
                  std::string(metric_name(metric)) + " n " + std::to_string(s.n) + " dim " + std::to_string(s.dim));
    }
  }
}

// Small integers: every distance is exact in float, so ties (and duplicates) are exact, and every
// row and its order must match the reference.
TEST(GpuMetricSearch, IntegerVectorsWithTiesAreExact) {
  QV_REQUIRE_GPU();
  for (Metric metric : {Metric::l2, Metric::l1, Metric::linf}) {
    for (int64_t dim : {1, 3, 17}) {
      const int64_t n = 700;
      std::vector<float> x = integer_vectors(n, dim, uint32_t(dim * 3 + int(metric)), 3);
      for (int64_t r = 0; r < 50; ++r)  // duplicates of earlier rows
        std::copy(x.begin() + (r * 7) * dim, x.begin() + (r * 7 + 1) * dim, x.begin() + (n - 1 - r) * dim);
      const Space space = vectors(dim, x);
      Space queries;
      queries.dim = dim;
      queries.x = integer_vectors(12, dim, 99, 3);
      queries.x.insert(queries.x.end(), x.begin(), x.begin() + 3 * dim);
      const Matrix d = distance_matrix(metric, queries, space);
      const std::vector<float> radii = {0.0f, 1.0f, 2.0f, quantile_radius(d, 0.05), quantile_radius(d, 0.5), 1e30f};
      check_space(metric, space, queries, true, 8, 5, radii, {1, 10, 64, n + 1},
                  std::string("integers ") + metric_name(metric) + " dim " + std::to_string(dim));
    }
  }
}

// ---- strings -------------------------------------------------------------------------------------------

std::vector<uint8_t> random_string(std::mt19937& gen, int64_t length, const std::vector<uint8_t>& alphabet) {
  std::vector<uint8_t> s(static_cast<size_t>(length));
  for (auto& c : s) c = alphabet[gen() % alphabet.size()];
  return s;
}

// A few edits of s.
std::vector<uint8_t> mutate(std::mt19937& gen, std::vector<uint8_t> s, int edits, const std::vector<uint8_t>& alphabet) {
  for (int e = 0; e < edits; ++e) {
    const int kind = int(gen() % 3);
    if (kind == 0 || s.empty()) s.insert(s.begin() + (s.empty() ? 0 : gen() % (s.size() + 1)), alphabet[gen() % alphabet.size()]);
    else if (kind == 1) s.erase(s.begin() + gen() % s.size());
    else s[gen() % s.size()] = alphabet[gen() % alphabet.size()];
  }
  return s;
}

// Bytes are not text: zero, high bytes, a UTF-8 sequence's pieces.
const std::vector<uint8_t> kAlphabet = {'a', 'c', 'g', 't', 0x00, 0x80, 0xff, 0xc3, 0xa9};

TEST(GpuMetricSearch, StringsEveryMethodIsExact) {
  QV_REQUIRE_GPU();
  std::mt19937 gen(11);
  Space space;
  const int64_t lengths[] = {0, 1, 2, 5, 17, 40, 63, 64, 65, 100, 128, 129, 200};
  for (int64_t i = 0; i < 300; ++i) {
    if (i % 10 == 9 && i > 10) {
      space.push(mutate(gen, space.string(i / 2), int(gen() % 4), kAlphabet));  // near neighbours
    } else if (i % 37 == 36) {
      space.push(space.string(i - 1));  // a duplicate
    } else {
      space.push(random_string(gen, lengths[gen() % 13], kAlphabet));
    }
  }
  Space queries;
  for (int64_t length : {0, 1, 63, 64, 65, 200}) queries.push(random_string(gen, length, kAlphabet));
  for (int64_t i = 0; i < 8; ++i) queries.push(mutate(gen, space.string(i * 37), int(i % 3), kAlphabet));
  queries.push(space.string(5));
  check_space(Metric::edit, space, queries, true, 8, 4, {0.0f, 1.0f, 3.0f, 8.5f, 40.0f, 1e30f}, {1, 5, 50, 301},
              "strings");
}

// Long patterns: several words (65 .. 2048 bytes: masks in shared memory) and beyond 2 KiB (masks in
// global memory); long texts with short patterns.
TEST(GpuMetricSearch, LongStringsAreExact) {
  QV_REQUIRE_GPU();
  std::mt19937 gen(12);
  const std::vector<uint8_t> dna = {'a', 'c', 'g', 't'};
  Space space;
  // Under the sanitizer, which checks every step of a thread's DP, 2200 bytes: 35 words, still beyond
  // the shared-memory limit.
  const std::vector<uint8_t> long_base = random_string(gen, sized(3000, 2200), dna);
  for (int64_t i = 0; i < 40; ++i) {
    if (i % 10 == 0) space.push(mutate(gen, long_base, int(i), dna));  // four of about 3000 bytes
    else if (i % 10 == 5) space.push(random_string(gen, 2100 + i, dna));
    else space.push(random_string(gen, int64_t(gen() % 300), i % 2 ? dna : kAlphabet));
  }
  Space queries;
  queries.push(mutate(gen, long_base, 20, dna));  // 3000 bytes: 47 words, masks in global memory
  queries.push(random_string(gen, 2048, dna));    // 32 words: the shared-memory limit
  queries.push(random_string(gen, 200, dna));
  queries.push(random_string(gen, 65, dna));
  queries.push(space.string(3));
  // Under the sanitizer radius 0, one that stops the DP part way and one that takes every row; k = 1
  // is bounded as k = 3 is.
  const std::vector<float> radii = sanitizer_sizes() ? std::vector<float>{0.0f, 100.0f, 1e30f}
                                                     : std::vector<float>{0.0f, 10.0f, 100.0f, 400.0f, 1e30f};
  const std::vector<int64_t> ks = sanitizer_sizes() ? std::vector<int64_t>{3, 41} : std::vector<int64_t>{1, 3, 41};
  check_space(Metric::edit, space, queries, true, 4, 3, radii, ks, "long strings");
}

// ---- limits, tiling, errors ---------------------------------------------------------------------------------

TEST(GpuMetricSearch, TooManyResultsNamesQueryAndCap) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  const Space space = vectors(4, uniform_vectors(300, 4, 3));
  Index index = make_index(resources, Metric::l2, space, 8, 3);
  const Space queries = vector_queries(space, 3, 4);
  for (MetricMethod m : kMethods) {
    // Query 0 is row 0 itself: radius 0 gives it one hit and the others none.
    Space two = queries;
    two.x.resize(size_t(2 * 4));
    two.x[4] = 1000.0f;  // query 1 far from everything
    EXPECT_NO_THROW(range(resources, *index.device, m, two, 0.0f, Filter{}, 1));
    try {
      range(resources, *index.device, m, queries, 1e30f, Filter{}, 299);
      ADD_FAILURE() << method_name(m) << ": no error above the cap";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::too_many_results) << method_name(m);
      const std::string message = e.what();
      EXPECT_NE(message.find("query 0"), std::string::npos) << message;
      EXPECT_NE(message.find("299"), std::string::npos) << message;
    }
    const gpu::MetricHits all = range(resources, *index.device, m, queries, 1e30f, Filter{}, 300);
    EXPECT_EQ(all.lims.back(), 300 * queries.size()) << method_name(m);
    const gpu::MetricHits unlimited = range(resources, *index.device, m, queries, 1e30f, Filter{}, 0);
    expect_same_hits(unlimited, all, method_name(m));
  }
}

// A tiny tile budget: many query tiles, hit buffers that overflow (the hits found again), packed
// groups, key chunks whose selections continue one another. Results equal the default's.
TEST(GpuMetricSearch, SmallTileBudgetGivesTheSameResults) {
  QV_REQUIRE_GPU();
  gpu::ResourcesPtr small = make_test_resources(64 << 10);
  gpu::Resources& resources = shared_resources();
  const Space space = vectors(5, uniform_vectors(3001, 5, 21));
  // More than one tile of 1024. Under the sanitizer 50: List of Clusters' range search still takes
  // two tiles (45 queries a tile at this budget), its hit groups two queries each.
  const Space queries = vectors(5, uniform_vectors(sized(1500, 50), 5, 22));
  Index index = make_index(resources, Metric::l1, space, 16, 4);
  Index small_index = make_index(*small, Metric::l1, space, 16, 4);
  const Filter filter = random_filter(3001, 0.7, 23);
  Space few = queries;
  few.x.resize(size_t(4 * 5));
  for (MetricMethod m : kMethods) {
    for (float radius : {0.3f, 2.5f}) {
      expect_same_hits(range(*small, *small_index.device, m, queries, radius, filter),
                       range(resources, *index.device, m, queries, radius, filter),
                       std::string(method_name(m)) + " radius " + std::to_string(radius));
    }
    for (int64_t k : {1, 100, 2048}) {
      // k = 2048 fills a tile with one query at this budget: under the sanitizer the four of `few`.
      const Space& searched = k == 2048 && sanitizer_sizes() ? few : queries;
      expect_same_knn(knn(*small, *small_index.device, m, searched, k, filter),
                      knn(resources, *index.device, m, searched, k, filter),
                      std::string(method_name(m)) + " k " + std::to_string(k));
    }
  }
  // The brute-force reference of a few queries, through the small budget.
  const Matrix d = distance_matrix(Metric::l1, few, space);
  expect_range_matches(Metric::l1, range(*small, *small_index.device, MetricMethod::sss, few, 2.5f, filter), d, 2.5f,
                       filter, false, "small budget");
  expect_knn_matches(knn(*small, *small_index.device, MetricMethod::list_of_clusters, few, 300, filter), d, 300,
                     filter, false, "small budget");
}

// Thousands of clusters and few queries: the range search's cluster walk runs over several chunks of
// clusters and several splits a query, the SSS test over several splits of rows; every result
// equals brute force's, which matches the reference.
TEST(GpuMetricSearch, ManyClustersSplitOverBlocks) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  const Space space = vectors(4, uniform_vectors(20000, 4, 41));
  const Space queries = vector_queries(space, 3, 42);
  Index index = make_index(resources, Metric::l2, space, 8, 6);
  const Matrix d = distance_matrix(Metric::l2, queries, space);
  const Filter filters[] = {Filter{}, random_filter(space.size(), 0.5, 43)};
  for (const Filter& filter : filters) {
    for (float radius : {0.0f, quantile_radius(d, 0.0005), quantile_radius(d, 0.01), quantile_radius(d, 0.3)}) {
      const std::string what = "radius " + std::to_string(radius) + (filter.on ? " filtered" : "");
      const gpu::MetricHits brute = range(resources, *index.device, MetricMethod::brute_force, queries, radius, filter);
      expect_range_matches(Metric::l2, brute, d, radius, filter, false, what + " brute force");
      for (MetricMethod m : {MetricMethod::list_of_clusters, MetricMethod::sss})
        expect_same_hits(range(resources, *index.device, m, queries, radius, filter), brute,
                         what + " " + method_name(m));
    }
  }
}

TEST(GpuMetricSearch, EmptySpaceAndNoQueries) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  for (Metric metric : {Metric::l2, Metric::edit}) {
    const int64_t dim = metric == Metric::edit ? 0 : 3;
    Space empty;
    empty.dim = dim;
    gpu::MetricDevicePtr device = gpu::make_metric_device(resources, metric, dim);
    const gpu::LcTables lc;  // no clusters
    const gpu::SssTables sss;
    gpu::metric_upload(resources, *device, empty.objects(), &lc, &sss);
    EXPECT_EQ(gpu::metric_rows(*device), 0);
    Space queries;
    queries.dim = dim;
    if (dim > 0) queries.x = {1, 2, 3, 4, 5, 6};
    else {
      queries.push({'a', 'b'});
      queries.push({});
    }
    for (MetricMethod m : kMethods) {
      const gpu::MetricHits hits = range(resources, *device, m, queries, 1e30f, Filter{});
      EXPECT_EQ(hits.lims, std::vector<int64_t>(3, 0));
      EXPECT_TRUE(hits.rows.empty());
      const Knn found = knn(resources, *device, m, queries, 3, Filter{});
      EXPECT_EQ(found.rows, std::vector<int64_t>(6, -1));
      EXPECT_EQ(found.distances, std::vector<float>(6, kInf));
      const gpu::MetricHits none = range(resources, *device, m, empty, 1.0f, Filter{});
      EXPECT_EQ(none.lims, std::vector<int64_t>(1, 0));
    }
    // Filled, then emptied again.
    Space one = empty;
    if (dim > 0) one.x = {0, 0, 0};
    else one.push({'x'});
    gpu::metric_upload(resources, *device, one.objects(), nullptr, nullptr);
    EXPECT_EQ(gpu::metric_rows(*device), 1);
    const Knn found = knn(resources, *device, MetricMethod::brute_force, queries, 2, Filter{});
    EXPECT_EQ(found.rows[0], 0);
    EXPECT_EQ(found.rows[1], -1);
    gpu::metric_upload(resources, *device, empty.objects(), nullptr, nullptr);
    EXPECT_EQ(gpu::metric_rows(*device), 0);
  }
}

template <typename F>
void expect_status(Status status, F&& call, const std::string& what) {
  try {
    call();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << what << ": " << e.what();
  }
}

TEST(GpuMetricSearch, RejectsBadArgumentsAndKeepsContents) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  const Space space = vectors(2, uniform_vectors(50, 2, 31));
  const Space queries = vector_queries(space, 2, 32);
  gpu::MetricDevicePtr device = gpu::make_metric_device(resources, Metric::l2, 2);
  gpu::metric_upload(resources, *device, space.objects(), nullptr, nullptr);
  expect_status(Status::invalid_argument,
                [&] { range(resources, *device, MetricMethod::list_of_clusters, queries, 1.0f, Filter{}); },
                "LC without tables");
  expect_status(Status::invalid_argument, [&] { knn(resources, *device, MetricMethod::sss, queries, 1, Filter{}); },
                "SSS without tables");
  expect_status(Status::invalid_argument,
                [&] { range(resources, *device, MetricMethod::brute_force, queries, -1.0f, Filter{}); },
                "negative radius");
  expect_status(Status::invalid_argument, [&] { knn(resources, *device, MetricMethod::brute_force, queries, 0, Filter{}); },
                "k = 0");
  expect_status(Status::invalid_argument,
                [&] { knn(resources, *device, MetricMethod::brute_force, queries, 2049, Filter{}); }, "k = 2049");
  const Space wrong = vectors(3, uniform_vectors(2, 3, 33));
  expect_status(Status::invalid_argument,
                [&] { range(resources, *device, MetricMethod::brute_force, wrong, 1.0f, Filter{}); }, "wrong dim");
  expect_status(Status::invalid_argument, [&] { gpu::make_metric_device(resources, Metric::inner_product, 2); },
                "inner product");
  expect_status(Status::invalid_argument, [&] { gpu::make_metric_device(resources, Metric::edit, 4); },
                "edit distance with dim");

  // Tables that break the invariants: nothing changes.
  const Knn before = knn(resources, *device, MetricMethod::brute_force, queries, 5, Filter{});
  LcBuilt lc = build_lc(space.size(), 4, [&](int64_t i, int64_t j) { return distance(Metric::l2, space, i, space, j); });
  lc.members[0] = lc.centres[0];  // a row twice
  const gpu::LcTables bad = lc.view();
  const Space other = vectors(2, uniform_vectors(50, 2, 34));
  expect_status(Status::invalid_argument, [&] { gpu::metric_upload(resources, *device, other.objects(), &bad, nullptr); },
                "row in two clusters");
  SssBuilt sss = build_sss(space.size(), 2, [&](int64_t i, int64_t j) { return distance(Metric::l2, space, i, space, j); });
  sss.pivots[1] = 50;
  const gpu::SssTables bad_sss = sss.view();
  expect_status(Status::invalid_argument,
                [&] { gpu::metric_upload(resources, *device, other.objects(), nullptr, &bad_sss); }, "pivot not a row");
  EXPECT_EQ(gpu::metric_rows(*device), 50);
  expect_same_knn(knn(resources, *device, MetricMethod::brute_force, queries, 5, Filter{}), before, "after failures");
}

}  // namespace
}  // namespace quiver::testing
