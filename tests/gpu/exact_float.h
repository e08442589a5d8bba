// The exact search's float32 results on the CPU, for the GPU tests that compare bit for bit: the
// sums of cuda/flat/exact_distances.h (one fixed order, fused multiply-adds), and the uniform
// problems the k-NN tests share.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "cpp/core/metric.h"
#include "gpu_testing.h"

namespace quiver::testing {

// The squared distance (l2) or the product, as exact_distances.h sums it.
inline float fma_value(bool l2, const float* x, const float* y, int64_t dim) {
  float acc = 0.f;
  for (int64_t i = 0; i < dim; ++i) {
    if (l2) {
      const float t = x[i] - y[i];
      acc = std::fma(t, t, acc);
    } else {
      acc = std::fma(x[i], y[i], acc);
    }
  }
  return acc;
}

// The same as a key, smaller is closer.
inline float fma_key(bool l2, const float* x, const float* y, int64_t dim) {
  const float v = fma_value(l2, x, y, dim);
  return l2 ? v : -v;
}

struct KnnProblem {
  int64_t n, dim, nq;
  Metric metric;
  std::vector<float> base, queries;
};

// Uniform rows and queries moved by `offset` (cosine: normalised).
inline KnnProblem uniform_problem(int64_t n, int64_t dim, int64_t nq, Metric metric, uint32_t seed,
                                  float offset = 0.f) {
  KnnProblem p{n, dim, nq, metric, uniform_vectors(n, dim, seed), uniform_vectors(nq, dim, seed + 1)};
  for (auto& v : p.base) v += offset;
  for (auto& v : p.queries) v += offset;
  if (metric == Metric::cosine) {
    normalize(p.base, dim);
    normalize(p.queries, dim);
  }
  return p;
}

// The exact result: nq x k distances and ids (ties to the smaller row), padded with the metric's
// missing distance and -1; rows the filter (null: none) leaves out are skipped.
inline void exact_knn_reference(const KnnProblem& p, int64_t k, const std::vector<uint8_t>* filter,
                                std::vector<float>& dist, std::vector<int64_t>& ids) {
  const bool l2 = p.metric == Metric::l2;
  dist.assign(size_t(p.nq * k), missing_distance(p.metric));
  ids.assign(size_t(p.nq * k), -1);
  std::vector<std::pair<float, int64_t>> all;
  for (int64_t q = 0; q < p.nq; ++q) {
    all.clear();
    for (int64_t j = 0; j < p.n; ++j)
      if (allowed(filter, j)) all.push_back({fma_key(l2, &p.queries[q * p.dim], &p.base[j * p.dim], p.dim), j});
    const size_t top = std::min(all.size(), size_t(k));
    std::partial_sort(all.begin(), all.begin() + top, all.end());
    for (size_t i = 0; i < top; ++i) {
      dist[q * k + i] = l2 ? all[i].first : -all[i].first;
      ids[q * k + i] = all[i].second;
    }
  }
}

// Expects dist / ids (nq x k, unfiltered) to be exact_knn_reference's, bit for bit; reports the first
// entry that differs.
inline void expect_exact_knn(const KnnProblem& p, int64_t k, const std::vector<float>& dist,
                             const std::vector<int64_t>& ids) {
  std::vector<float> want_d;
  std::vector<int64_t> want_i;
  exact_knn_reference(p, k, nullptr, want_d, want_i);
  for (size_t e = 0; e < ids.size(); ++e) {
    EXPECT_EQ(ids[e], want_i[e]) << "entry " << e;
    EXPECT_EQ(dist[e], want_d[e]) << "entry " << e << " id " << ids[e];
    if (ids[e] != want_i[e] || dist[e] != want_d[e]) break;
  }
}

}  // namespace quiver::testing
