// Metric-space indexes ("Flat" of L1 / L-infinity / edit distance, "LC<b>", "SSS<alpha>") checked
// through the C API against float64 / dynamic-programming references, on any context: the CPU suite
// (metric_space_test.cpp) and the GPU suite (tests/gpu/metric_index_gpu_test.cpp) run the same checks.
#pragma once

#include "test_util.h"

namespace qvtest {

// ---- strings -------------------------------------------------------------------------------------

struct StringSet {
  std::vector<int64_t> offsets{0};
  std::vector<uint8_t> bytes;
  int64_t size() const { return static_cast<int64_t>(offsets.size()) - 1; }
  void push(const std::vector<uint8_t>& s) {
    bytes.insert(bytes.end(), s.begin(), s.end());
    offsets.push_back(static_cast<int64_t>(bytes.size()));
  }
  std::vector<uint8_t> at(int64_t i) const {
    return std::vector<uint8_t>(bytes.begin() + offsets[i], bytes.begin() + offsets[i + 1]);
  }
};

inline int64_t RefEditDistance(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  std::vector<int64_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];
    row[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// Words over a small alphabet (many near neighbours and duplicates), a few long strings (multi-word
// bit vectors), empty strings and bytes outside ASCII (0x00 and 0x80 .. 0xFF).
inline StringSet RandomWords(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  StringSet set;
  const uint8_t alphabet[] = {'a', 'b', 'c', 'd', 0x00, 0xC3, 0xB1, 0xFF};
  for (int64_t i = 0; i < n; ++i) {
    int64_t length = static_cast<int64_t>(rng() % 9);
    if (i % 23 == 5) length = 60 + static_cast<int64_t>(rng() % 90);  // 60 .. 149 bytes
    if (i % 41 == 7) length = 0;
    std::vector<uint8_t> s(static_cast<size_t>(length));
    const int64_t letters = i % 3 == 0 ? 8 : 4;
    for (uint8_t& c : s) c = alphabet[rng() % letters];
    set.push(s);
  }
  return set;
}

// Queries: base strings, base strings with one or two random edits, and fresh random words.
inline StringSet QueryWords(const StringSet& base, int64_t nq, uint64_t seed) {
  std::mt19937_64 rng(seed);
  StringSet queries;
  const StringSet fresh = RandomWords(nq, seed + 1);
  for (int64_t i = 0; i < nq; ++i) {
    std::vector<uint8_t> s = i % 3 == 2 ? fresh.at(i) : base.at(static_cast<int64_t>(rng() % base.size()));
    if (i % 3 == 1) {
      const int64_t edits = 1 + static_cast<int64_t>(rng() % 2);
      for (int64_t e = 0; e < edits; ++e) {
        const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
        if (rng() % 2 == 0 || s.empty() || at == s.size()) {
          s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), static_cast<uint8_t>('a' + rng() % 4));
        } else {
          s[at] = static_cast<uint8_t>('a' + rng() % 4);
        }
      }
    }
    queries.push(s);
  }
  return queries;
}

// ---- vectors -------------------------------------------------------------------------------------

// The distance in the metric's C API units (L2 squared), in float64.
inline double RefMetricDistance(qv_metric_t metric, const float* a, const float* b, int64_t dim) {
  double sum = 0, largest = 0;
  for (int64_t j = 0; j < dim; ++j) {
    const double d = static_cast<double>(a[j]) - b[j];
    sum += metric == QV_METRIC_L2 ? d * d : std::fabs(d);
    largest = std::max(largest, std::fabs(d));
  }
  return metric == QV_METRIC_LINF ? largest : sum;
}

// ---- results -------------------------------------------------------------------------------------

// The reference hits of one query, sorted by (distance, id) (ids are rows in these tests).
inline std::vector<Hit> SortedHits(std::vector<Hit> hits) {
  std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
    return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
  });
  return hits;
}

// A range result against reference distances ref[q][row]: every row with ref <= radius - tol is
// present, none with ref > radius + tol; distances within tol of the reference; sorted closest first.
// With tol == 0 (edit distance) the result must equal the reference exactly, in (distance, id) order.
inline ::testing::AssertionResult CheckMetricRange(const std::vector<std::vector<double>>& ref, double radius,
                                                   double tol, const std::vector<bool>& allowed,
                                                   const qv_range_result_t* result) {
  int64_t nq = -1;
  const int64_t* lims = nullptr;
  const int64_t* ids = nullptr;
  const float* distances = nullptr;
  if (qv_range_result_get(result, &nq, &lims, &ids, &distances) != QV_OK)
    return ::testing::AssertionFailure() << "qv_range_result_get failed";
  if (nq != static_cast<int64_t>(ref.size())) return ::testing::AssertionFailure() << "nq " << nq;
  for (int64_t q = 0; q < nq; ++q) {
    std::vector<Hit> expected;
    for (size_t row = 0; row < ref[q].size(); ++row)
      if (allowed[row] && ref[q][row] <= radius - tol) expected.push_back({ref[q][row], static_cast<int64_t>(row)});
    std::set<int64_t> got;
    for (int64_t i = lims[q]; i < lims[q + 1]; ++i) {
      const int64_t id = ids[i];
      if (id < 0 || id >= static_cast<int64_t>(ref[q].size()) || !allowed[id])
        return ::testing::AssertionFailure() << "query " << q << ": id " << id << " not allowed";
      if (ref[q][id] > radius + tol)
        return ::testing::AssertionFailure() << "query " << q << ": id " << id << " at " << ref[q][id]
                                             << " is beyond radius " << radius;
      if (std::fabs(distances[i] - ref[q][id]) > tol)
        return ::testing::AssertionFailure() << "query " << q << ": id " << id << " distance " << distances[i]
                                             << " != " << ref[q][id];
      if (i > lims[q] && (distances[i] < distances[i - 1] ||
                          (distances[i] == distances[i - 1] && tol == 0 && ids[i] < ids[i - 1])))
        return ::testing::AssertionFailure() << "query " << q << ": hits not sorted at " << i;
      got.insert(id);
    }
    for (const Hit& h : expected)
      if (!got.count(h.id))
        return ::testing::AssertionFailure() << "query " << q << ": id " << h.id << " at " << h.distance
                                             << " missing (radius " << radius << ")";
    if (tol == 0 && static_cast<int64_t>(expected.size()) != lims[q + 1] - lims[q])
      return ::testing::AssertionFailure() << "query " << q << ": " << lims[q + 1] - lims[q] << " hits, expected "
                                           << expected.size();
  }
  return ::testing::AssertionSuccess();
}

// A k-NN result against reference distances: the k-th distance matches, every returned distance is
// the reference's, and nothing closer than the k-th was skipped; padding where fewer rows qualify.
// With tol == 0 the ids must equal the reference's (distance, id) order exactly.
inline ::testing::AssertionResult CheckMetricKnn(const std::vector<std::vector<double>>& ref, int64_t k, double tol,
                                                 const std::vector<bool>& allowed, const std::vector<float>& distances,
                                                 const std::vector<int64_t>& ids) {
  for (size_t q = 0; q < ref.size(); ++q) {
    std::vector<Hit> all;
    for (size_t row = 0; row < ref[q].size(); ++row)
      if (allowed[row]) all.push_back({ref[q][row], static_cast<int64_t>(row)});
    all = SortedHits(all);
    for (int64_t j = 0; j < k; ++j) {
      const float d = distances[q * k + j];
      const int64_t id = ids[q * k + j];
      if (j >= static_cast<int64_t>(all.size())) {
        if (id != -1 || !std::isinf(d))
          return ::testing::AssertionFailure() << "query " << q << " slot " << j << ": expected padding, got " << id;
        continue;
      }
      if (id < 0 || id >= static_cast<int64_t>(ref[q].size()) || !allowed[id])
        return ::testing::AssertionFailure() << "query " << q << " slot " << j << ": bad id " << id;
      if (std::fabs(d - ref[q][id]) > tol || std::fabs(ref[q][id] - all[j].distance) > tol)
        return ::testing::AssertionFailure() << "query " << q << " slot " << j << ": id " << id << " at " << d
                                             << ", expected distance " << all[j].distance;
      if (tol == 0 && id != all[j].id)
        return ::testing::AssertionFailure() << "query " << q << " slot " << j << ": id " << id << ", expected "
                                             << all[j].id;
    }
  }
  return ::testing::AssertionSuccess();
}

inline Index MakeStringIndex(qv_context_t* ctx, const char* descriptor) {
  return MakeIndex(ctx, 0, QV_METRIC_EDIT, descriptor);
}

inline std::vector<std::vector<double>> EditReference(const StringSet& base, const StringSet& queries) {
  std::vector<std::vector<double>> ref(static_cast<size_t>(queries.size()));
  for (int64_t q = 0; q < queries.size(); ++q)
    for (int64_t i = 0; i < base.size(); ++i)
      ref[q].push_back(static_cast<double>(RefEditDistance(queries.at(q), base.at(i))));
  return ref;
}

inline std::vector<std::vector<double>> VectorReference(qv_metric_t metric, const std::vector<float>& base,
                                                        const std::vector<float>& queries, int64_t dim) {
  const int64_t n = static_cast<int64_t>(base.size()) / dim, nq = static_cast<int64_t>(queries.size()) / dim;
  std::vector<std::vector<double>> ref(static_cast<size_t>(nq));
  for (int64_t q = 0; q < nq; ++q)
    for (int64_t i = 0; i < n; ++i) ref[q].push_back(RefMetricDistance(metric, &queries[q * dim], &base[i * dim], dim));
  return ref;
}

// Every string descriptor's range and k-NN results on ctx equal the DP reference exactly.
inline void CheckStringIndexes(qv_context_t* ctx, int64_t n, int64_t nq) {
  const StringSet base = RandomWords(n, 11 + n);
  const StringSet queries = QueryWords(base, nq, 5 + n);
  const auto ref = EditReference(base, queries);
  const std::vector<bool> all(static_cast<size_t>(n), true);
  for (const char* descriptor : {"Flat", "LC1", "LC7", "LC64", "SSS0.3", "SSS0.8,P4"}) {
    SCOPED_TRACE(descriptor);
    Index index = MakeStringIndex(ctx, descriptor);
    ASSERT_TRUE(index) << qv_last_error_message();
    QV_ASSERT_OK(qv_index_add_strings(index.get(), n, base.offsets.data(), base.bytes.data(), nullptr));
    for (float radius : {0.0f, 1.0f, 2.0f, 3.0f}) {
      qv_range_result_t* raw = nullptr;
      QV_ASSERT_OK(qv_index_range_search_strings(index.get(), nq, queries.offsets.data(), queries.bytes.data(),
                                                 radius, nullptr, &raw));
      RangeResult result(raw);
      EXPECT_TRUE(CheckMetricRange(ref, radius, 0.0, all, result.get())) << "radius " << radius;
    }
    for (uint32_t k : {1u, 5u, static_cast<uint32_t>(n + 3)}) {
      std::vector<float> distances(static_cast<size_t>(nq * k));
      std::vector<int64_t> ids(static_cast<size_t>(nq * k));
      QV_ASSERT_OK(qv_index_search_strings(index.get(), nq, queries.offsets.data(), queries.bytes.data(), k, nullptr,
                                           distances.data(), ids.data()));
      EXPECT_TRUE(CheckMetricKnn(ref, k, 0.0, all, distances, ids)) << "k " << k;
    }
  }
}

// Vector metric-space indexes on ctx against the float64 reference, and LC / SSS equal to each other.
inline void CheckVectorIndexes(qv_context_t* ctx, qv_metric_t metric, int64_t n, int64_t dim, int64_t nq) {
  std::vector<float> base = ClusteredVectors(n, dim, 5, 3, 17 + n);
  for (int64_t j = 0; j < dim; ++j) base[(n - 1) * dim + j] = base[j];  // a duplicate of row 0
  const std::vector<float> queries = ClusteredVectors(nq, dim, 5, 3, 29 + n);
  const auto ref = VectorReference(metric, base, queries, dim);
  const std::vector<bool> all(static_cast<size_t>(n), true);
  std::vector<double> sample;
  for (const auto& row : ref) sample.insert(sample.end(), row.begin(), row.end());
  std::sort(sample.begin(), sample.end());
  const double tol = 1e-4 * (1.0 + sample.back());
  std::vector<const char*> descriptors{"LC1", "LC9", "SSS0.4", "SSS0.9,P3"};
  if (metric != QV_METRIC_L2) descriptors.push_back("Flat");
  for (const char* descriptor : descriptors) {
    SCOPED_TRACE(descriptor);
    Index index = MakeIndex(ctx, dim, metric, descriptor);
    ASSERT_TRUE(index) << qv_last_error_message();
    QV_ASSERT_OK(qv_index_add(index.get(), n, base.data(), nullptr));
    for (double quantile : {0.0, 0.001, 0.01, 0.2, 1.0}) {
      const float radius = static_cast<float>(sample[static_cast<size_t>(quantile * (sample.size() - 1))]);
      qv_range_result_t* raw = nullptr;
      QV_ASSERT_OK(qv_index_range_search(index.get(), nq, queries.data(), radius, nullptr, &raw));
      RangeResult result(raw);
      EXPECT_TRUE(CheckMetricRange(ref, radius, tol, all, result.get())) << "radius " << radius;
    }
    for (uint32_t k : {1u, 10u, static_cast<uint32_t>(n + 2)}) {
      std::vector<float> distances(static_cast<size_t>(nq * k));
      std::vector<int64_t> ids(static_cast<size_t>(nq * k));
      QV_ASSERT_OK(qv_index_search(index.get(), nq, queries.data(), k, nullptr, distances.data(), ids.data()));
      EXPECT_TRUE(CheckMetricKnn(ref, k, tol, all, distances, ids)) << "k " << k;
    }
  }
}

// An L2 radius (squared, the caller's units) one float below a row's squared distance whose square
// root rounds to that row's distance: the triangle-inequality search, which works with distances,
// finds the row and the result must drop it, moving the next queries' hits down over it with their
// ids (ids that are not the rows: each is translated). LC and SSS on ctx.
inline void CheckL2HitsPastTheSquaredRadiusAreDropped(qv_context_t* ctx) {
  const int64_t n = 200;
  std::vector<float> x(n);
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) x[i] = 0.37f * float(i), ids[i] = 1000 + 3 * i;
  const std::vector<float> q = {0.11f, 9.3f};
  auto squared = [&](float query, int64_t i) {
    const float diff = query - x[i];
    return diff * diff;
  };
  float radius = 0.0f;  // a radius that query 0's search reaches past
  for (int64_t i = 1; i < n && radius == 0.0f; ++i) {
    const float below = std::nextafter(squared(q[0], i), 0.0f);
    if (std::sqrt(below) == std::sqrt(squared(q[0], i))) radius = below;
  }
  ASSERT_GT(radius, 0.0f);
  for (const char* descriptor : {"LC4", "SSS0.5"}) {
    SCOPED_TRACE(descriptor);
    Index index = MakeIndex(ctx, 1, QV_METRIC_L2, descriptor);
    QV_ASSERT_OK(qv_index_add(index.get(), n, x.data(), ids.data()));
    qv_range_result_t* raw = nullptr;
    QV_ASSERT_OK(qv_index_range_search(index.get(), 2, q.data(), radius, nullptr, &raw));
    RangeResult result(raw);
    int64_t nq = 0;
    const int64_t* lims = nullptr;
    const int64_t* found = nullptr;
    const float* distances = nullptr;
    QV_ASSERT_OK(qv_range_result_get(result.get(), &nq, &lims, &found, &distances));
    for (int64_t k = 0; k < 2; ++k) {
      std::vector<std::pair<float, int64_t>> expected;
      for (int64_t i = 0; i < n; ++i)
        if (squared(q[k], i) <= radius) expected.push_back({squared(q[k], i), ids[i]});
      std::sort(expected.begin(), expected.end());
      ASSERT_EQ(lims[k + 1] - lims[k], int64_t(expected.size())) << "query " << k;
      for (size_t j = 0; j < expected.size(); ++j) {
        EXPECT_EQ(found[lims[k] + j], expected[j].second) << "query " << k << " hit " << j;
        EXPECT_EQ(distances[lims[k] + j], expected[j].first) << "query " << k << " hit " << j;
      }
    }
  }
}

}  // namespace qvtest
