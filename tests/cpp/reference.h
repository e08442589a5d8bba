// Float64 brute-force references and random data for the engine tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace quiver::testing {

inline std::vector<float> random_vectors(int64_t n, int64_t dim, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> value(-scale, scale);
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (auto& v : x) v = value(gen);
  return x;
}

// Exact distances in double: squared L2 when l2, else the inner product.
inline double reference_distance(bool l2, const float* a, const float* b, int64_t dim) {
  double sum = 0;
  for (int64_t i = 0; i < dim; ++i)
    sum += l2 ? (double(a[i]) - b[i]) * (double(a[i]) - b[i]) : double(a[i]) * b[i];
  return sum;
}

// All (distance, row) pairs of one query, closest first.
inline std::vector<std::pair<double, int64_t>> reference_ranking(bool l2, const float* query,
                                                                 const float* base, int64_t n,
                                                                 int64_t dim) {
  std::vector<std::pair<double, int64_t>> all;
  for (int64_t j = 0; j < n; ++j) {
    const double d = reference_distance(l2, query, base + j * dim, dim);
    all.push_back({l2 ? d : -d, j});
  }
  std::sort(all.begin(), all.end());
  for (auto& p : all) p.first = l2 ? p.first : -p.first;
  return all;
}

}  // namespace quiver::testing
