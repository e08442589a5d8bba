// Data and helpers of the inverted-file engine tests: clustered vectors (IVF's natural input, unlike
// uniform noise), index construction through the factory, and recall against exact search.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/index/factory.h"
#include "cpp/index/index.h"

namespace quiver::testing {

// n x dim vectors around `clusters` centres (N(0, 4) coordinates) with N(0, spread^2) noise,
// scaled per row by [0.8, 1.25] so inner product and cosine rank differently.
inline std::vector<float> clustered_vectors(int64_t n, int64_t dim, int64_t clusters, uint32_t seed,
                                            float spread = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> centre(0.0f, 2.0f), noise(0.0f, spread);
  std::uniform_real_distribution<float> scale(0.8f, 1.25f);
  std::uniform_int_distribution<int64_t> pick(0, clusters - 1);
  std::mt19937 centre_gen(7);  // the same centres for base and queries
  std::vector<float> centres(static_cast<size_t>(clusters * dim));
  for (float& c : centres) c = centre(centre_gen);
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = pick(gen);
    const float s = scale(gen);
    for (int64_t d = 0; d < dim; ++d) x[i * dim + d] = s * (centres[c * dim + d] + noise(gen));
  }
  return x;
}

inline ContextOptions cpu_options(int threads = 2) {
  ContextOptions options;
  options.device = DeviceKind::cpu;
  options.cpu_threads = threads;
  return options;
}

struct Results {
  std::vector<float> distances;
  std::vector<int64_t> ids;
};

inline Results search(const Index& index, const std::vector<float>& queries, int64_t k,
                      const SearchOptions& options = SearchOptions{}) {
  const int64_t nq = static_cast<int64_t>(queries.size()) / index.dim();
  Results r{std::vector<float>(static_cast<size_t>(nq * k)), std::vector<int64_t>(static_cast<size_t>(nq * k))};
  index.search(nq, queries.data(), k, options, r.distances.data(), r.ids.data());
  return r;
}

inline SearchOptions probing(uint32_t nprobe, uint32_t refine_factor = 0) {
  SearchOptions options;
  options.nprobe = nprobe;
  options.refine_factor = refine_factor;
  return options;
}

// Mean over queries of |found top-k ∩ true top-k| / k.
inline double recall(const Results& found, const Results& truth, int64_t nq, int64_t k) {
  int64_t hits = 0;
  for (int64_t q = 0; q < nq; ++q) {
    std::set<int64_t> want(truth.ids.begin() + q * k, truth.ids.begin() + (q + 1) * k);
    for (int64_t i = 0; i < k; ++i) hits += want.count(found.ids[q * k + i]);
  }
  return static_cast<double>(hits) / static_cast<double>(nq * k);
}

// An index made by the factory, trained on and filled with x (ids: nullptr for 0, 1, ...).
inline std::unique_ptr<Index> build(Context& context, const std::string& descriptor, int64_t dim, Metric metric,
                                    const std::vector<float>& x, const int64_t* ids = nullptr) {
  auto index = create_index(context, descriptor, dim, metric);
  const int64_t n = static_cast<int64_t>(x.size()) / dim;
  index->train(n, x.data());
  index->add(n, x.data(), ids);
  return index;
}

// Builds `descriptor` on x once per thread count and expects the same results for q every time.
inline void expect_same_whatever_the_threads(const std::string& descriptor, int64_t dim, const std::vector<float>& x,
                                             const std::vector<float>& q, int64_t k, const SearchOptions& options,
                                             std::initializer_list<int> thread_counts) {
  Results first;
  for (int threads : thread_counts) {
    Context context(cpu_options(threads));
    auto index = build(context, descriptor, dim, Metric::l2, x);
    const auto r = search(*index, q, k, options);
    if (first.ids.empty()) first = r;
    EXPECT_EQ(r.ids, first.ids) << threads << " threads";
    EXPECT_EQ(r.distances, first.distances) << threads << " threads";
  }
}

// The status of running f, ok if it does not throw.
template <typename F>
Status status_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.status();
  }
  return Status::ok;
}

}  // namespace quiver::testing
