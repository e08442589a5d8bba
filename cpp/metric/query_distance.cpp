#include "cpp/metric/query_distance.h"

#include <cmath>

#include "cpp/core/error.h"
#include "cpp/metric/vector_distance.h"

namespace quiver {

QueryDistance::QueryDistance(Metric metric, const Objects& queries, int64_t q) : metric_(metric) {
  if (metric == Metric::edit) {
    pattern_.emplace(queries.strings.data(q), queries.strings.length(q));
  } else {
    require(is_true_metric(metric), "metric-space distances need a true metric, not ", metric_name(metric));
    vector_ = queries.vector(q);
    dim_ = queries.dim;
  }
}

float QueryDistance::operator()(const Objects& objects, int64_t row) const {
  if (pattern_) {
    return static_cast<float>(pattern_->distance(objects.strings.data(row), objects.strings.length(row)));
  }
  return metric_distance(metric_, vector_, objects.vector(row), dim_);
}

float QueryDistance::within(const Objects& objects, int64_t row, float bound) const {
  if (pattern_) {
    // Past these the bound stops nothing (a distance is >= 0 and at most the longer length).
    if (!(bound >= 0.0f && bound < 1e15f)) return (*this)(objects, row);
    const int64_t whole = static_cast<int64_t>(std::floor(bound));
    return static_cast<float>(
        pattern_->distance_within(objects.strings.data(row), objects.strings.length(row), whole));
  }
  return metric_distance(metric_, vector_, objects.vector(row), dim_);
}

}  // namespace quiver
