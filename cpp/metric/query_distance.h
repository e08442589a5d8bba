// Distances from one query object to the objects of a metric space, in the metric's true units
// (Euclidean, not squared, for L2; an integer for edit distance), so the triangle inequality holds.
// A query is prepared once (an edit-distance query builds its match masks) and compared with many
// objects; immutable after construction.
#pragma once

#include <cstdint>
#include <optional>

#include "cpp/core/metric.h"
#include "cpp/metric/edit_distance.h"
#include "cpp/metric/objects.h"

namespace quiver {

class QueryDistance {
 public:
  // Query q of `queries`; metric l2, l1, linf (vectors) or edit (strings).
  QueryDistance(Metric metric, const Objects& queries, int64_t q);

  // The distance to object `row` of `objects`.
  float operator()(const Objects& objects, int64_t row) const;
  // The distance to object `row` if it is <= bound, else some value > bound (may stop early).
  float within(const Objects& objects, int64_t row, float bound) const;

 private:
  Metric metric_;
  const float* vector_ = nullptr;
  int64_t dim_ = 0;
  std::optional<EditPattern> pattern_;
};

// Floating-point distances are rounded: a bound from the triangle inequality, d(q,x) >= |d(q,p) -
// d(x,p)|, may exceed the computed d(q,x) by a few ulps of the terms. Pruning a candidate only when
// its bound exceeds the radius by this slack keeps metric indexes exactly equal to brute force.
// Edit distances are exact integers and need none.
inline float pruning_slack(Metric metric, float scale) {
  return metric == Metric::edit ? 0.0f : 1e-5f * scale + 1e-30f;
}

}  // namespace quiver
