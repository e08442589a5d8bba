#include "cpp/metric/metric_method.h"

#include <limits>

namespace quiver {

float HitHeap::radius() const {
  return hits_.size() < k_ ? std::numeric_limits<float>::infinity() : hits_.front().distance;
}

void HitHeap::push(const MetricHit& hit) {
  if (hits_.size() < k_) {
    hits_.push_back(hit);
    std::push_heap(hits_.begin(), hits_.end());
  } else if (hit < hits_.front()) {
    std::pop_heap(hits_.begin(), hits_.end());
    hits_.back() = hit;
    std::push_heap(hits_.begin(), hits_.end());
  }
}

std::vector<MetricHit> HitHeap::take_sorted() {
  std::sort_heap(hits_.begin(), hits_.end());
  return std::move(hits_);
}

int64_t BruteForce::range(const QueryDistance& query, const Objects& objects, float r,
                          const RowAllowed& allowed, std::vector<MetricHit>& hits) const {
  int64_t evaluations = 0;
  for (int64_t row = 0; row < objects.n; ++row) {
    if (!allowed(row)) continue;
    ++evaluations;
    const float d = query.within(objects, row, r);
    if (d <= r) hits.push_back({d, row});
  }
  return evaluations;
}

int64_t BruteForce::knn(const QueryDistance& query, const Objects& objects, const RowAllowed& allowed,
                        HitHeap& best) const {
  int64_t evaluations = 0;
  for (int64_t row = 0; row < objects.n; ++row) {
    if (!allowed(row)) continue;
    ++evaluations;
    best.push({query.within(objects, row, best.radius()), row});
  }
  return evaluations;
}

std::vector<int64_t> renumbering(int64_t rows, const std::vector<int64_t>& erased) {
  std::vector<int64_t> to(static_cast<size_t>(rows));
  size_t next = 0;
  int64_t kept = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (next < erased.size() && erased[next] == r) {
      to[r] = -1;
      ++next;
    } else {
      to[r] = kept++;
    }
  }
  return to;
}

}  // namespace quiver
