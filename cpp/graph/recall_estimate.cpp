#include "cpp/graph/recall_estimate.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>
#include <utility>

#include "cpp/core/gather_rows.h"
#include "cpp/core/random.h"
#include "cpp/graph/exact_neighbours.h"
#include "cpp/graph/neighbour_lists.h"

namespace quiver {

namespace {

// Relative slack when comparing a graph distance with the exact k-th one: the exact search may
// compute a distance with a different summation order (GPU, GEMM) than the graph builder.
constexpr double kTieSlack = 1e-5;

// `count` distinct points of 0 .. n-1, sorted (Floyd's algorithm: count draws, no rejection loop).
std::vector<int64_t> sample_points(int64_t n, int64_t count, uint64_t seed) {
  std::vector<int64_t> out;
  if (count >= n) {
    out.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[i] = i;
    return out;
  }
  Random rng(seed ^ 0x5ca1ab1e0ddba11ULL);
  std::unordered_set<int64_t> chosen;
  for (int64_t j = n - count; j < n; ++j) {
    const int64_t t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j + 1)));
    chosen.insert(chosen.count(t) ? j : t);
  }
  out.assign(chosen.begin(), chosen.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

RecallSample::RecallSample(ExactNeighbours& exact, Metric metric, int64_t dim, int64_t n, const float* x,
                           int64_t k, int64_t sample, uint64_t seed)
    : metric_(metric), k_(k), points_(sample_points(n, sample, seed)), point_vectors_(gather_rows(x, dim, points_)) {
  const int64_t m = static_cast<int64_t>(points_.size());
  // k + 1: the point itself is normally among its nearest and is not a neighbour.
  std::vector<float> found_d(static_cast<size_t>(m * (k + 1)));
  std::vector<int64_t> found_i(static_cast<size_t>(m * (k + 1)));
  exact.search(m, point_vectors_.data(), k + 1, found_d.data(), found_i.data());
  truth_.reserve(static_cast<size_t>(m * k));
  kth_.resize(static_cast<size_t>(m));
  for (int64_t q = 0; q < m; ++q) {
    int64_t taken = 0;
    for (int64_t j = 0; j <= k && taken < k; ++j) {
      if (found_i[q * (k + 1) + j] == points_[q]) continue;
      truth_.push_back(found_i[q * (k + 1) + j]);
      kth_[q] = found_d[q * (k + 1) + j];
      ++taken;
    }
  }
}

template <typename Get>
double RecallSample::measure(Get get) const {
  const int64_t m = static_cast<int64_t>(points_.size());
  if (m == 0) return 1.0;
  const bool similarity = larger_is_closer(metric_);
  double hits = 0;
  for (int64_t q = 0; q < m; ++q) {
    const int64_t* truth = &truth_[q * k_];
    const double kth = kth_[q];
    const double slack = kTieSlack * std::fabs(kth);
    for (int64_t j = 0; j < k_; ++j) {
      const std::pair<int64_t, double> found = get(q, j);
      const bool tied = similarity ? found.second >= kth - slack : found.second <= kth + slack;
      if (tied || std::find(truth, truth + k_, found.first) != truth + k_) hits += 1;
    }
  }
  return hits / double(m * k_);
}

double RecallSample::recall(const int32_t* neighbours, const float* distances) const {
  return measure([&](int64_t q, int64_t j) {
    const int64_t u = points_[q];
    return std::pair<int64_t, double>(neighbours[u * k_ + j], distances[u * k_ + j]);
  });
}

double RecallSample::recall_of_sample(const int32_t* neighbours, const float* distances) const {
  return measure([&](int64_t q, int64_t j) {
    return std::pair<int64_t, double>(neighbours[q * k_ + j], distances[q * k_ + j]);
  });
}

double RecallSample::recall(const NeighbourLists& lists) const {
  const bool similarity = larger_is_closer(metric_);
  return measure([&](int64_t q, int64_t j) {
    const int64_t u = points_[q];
    const double key = lists.keys(u)[j];
    return std::pair<int64_t, double>(lists.ids(u)[j], similarity ? -key : key);
  });
}

}  // namespace quiver
