// Merging the results of a sharded index's parts: k-selection of each query's best k over the parts'
// k-NN lists, and the union of their range hits. Closest first; equal distances by smaller id.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/core/metric.h"
#include "cpp/core/thread_pool.h"
#include "cpp/exact/range.h"

namespace quiver {

// One part's k-NN result: nq x k, each row closest first, missing entries (id -1) last.
struct PartResult {
  std::vector<float> distances;
  std::vector<int64_t> ids;
};

// The best k of every query over all parts into distances / ids (nq x k host arrays); rows with
// fewer than k results end with id -1 and missing_distance(metric).
void merge_knn(ThreadPool& pool, Metric metric, int64_t nq, int64_t k, const PartResult* parts, int64_t count,
               float* distances, int64_t* ids);

// Every part's hits of each query, sorted closest first.
RangeResult merge_range(ThreadPool& pool, Metric metric, int64_t nq, const std::vector<RangeResult>& parts);

}  // namespace quiver
