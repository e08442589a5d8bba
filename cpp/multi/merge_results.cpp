#include "cpp/multi/merge_results.h"

#include <algorithm>

namespace quiver {

namespace {

// Whether hit (da, ia) comes before (db, ib): closer, or as close with the smaller id; missing last.
struct Closer {
  bool larger_closer;
  bool operator()(float da, int64_t ia, float db, int64_t ib) const {
    if ((ia < 0) != (ib < 0)) return ib < 0;
    if (da != db) return larger_closer ? da > db : da < db;
    return ia < ib;
  }
};

// Queries per pool task: enough to amortise the task, few enough to spread a small batch.
constexpr int64_t kQueriesPerTask = 64;

}  // namespace

void merge_knn(ThreadPool& pool, Metric metric, int64_t nq, int64_t k, const PartResult* parts, int64_t parts_count,
               float* distances, int64_t* ids) {
  const Closer closer{larger_is_closer(metric)};
  const size_t count = static_cast<size_t>(parts_count);
  const int64_t tasks = (nq + kQueriesPerTask - 1) / kQueriesPerTask;
  pool.parallel_for(tasks, [&](int64_t task) {
    std::vector<int64_t> head(count);
    const int64_t end = std::min(nq, (task + 1) * kQueriesPerTask);
    for (int64_t q = task * kQueriesPerTask; q < end; ++q) {
      std::fill(head.begin(), head.end(), 0);
      const int64_t row = q * k;
      for (int64_t out = 0; out < k; ++out) {
        // The closest head among the parts' sorted lists (parts are few: a linear scan).
        size_t best = count;
        for (size_t p = 0; p < count; ++p) {
          if (head[p] == k) continue;
          const int64_t at = row + head[p];
          if (best == count || closer(parts[p].distances[at], parts[p].ids[at], parts[best].distances[row + head[best]],
                                      parts[best].ids[row + head[best]]))
            best = p;
        }
        const int64_t at = row + head[best]++;
        const bool missing = parts[best].ids[at] < 0;
        distances[row + out] = missing ? missing_distance(metric) : parts[best].distances[at];
        ids[row + out] = missing ? -1 : parts[best].ids[at];
      }
    }
  });
}

RangeResult merge_range(ThreadPool& pool, Metric metric, int64_t nq, const std::vector<RangeResult>& parts) {
  const Closer closer{larger_is_closer(metric)};
  RangeResult result;
  result.lims.assign(static_cast<size_t>(nq + 1), 0);
  for (int64_t q = 0; q < nq; ++q) {
    int64_t hits = 0;
    for (const RangeResult& part : parts) hits += part.lims[q + 1] - part.lims[q];
    result.lims[q + 1] = result.lims[q] + hits;
  }
  result.ids.resize(static_cast<size_t>(result.lims[nq]));
  result.distances.resize(result.ids.size());
  const int64_t tasks = (nq + kQueriesPerTask - 1) / kQueriesPerTask;
  pool.parallel_for(tasks, [&](int64_t task) {
    std::vector<std::pair<float, int64_t>> hits;
    const int64_t end = std::min(nq, (task + 1) * kQueriesPerTask);
    for (int64_t q = task * kQueriesPerTask; q < end; ++q) {
      hits.clear();
      for (const RangeResult& part : parts)
        for (int64_t h = part.lims[q]; h < part.lims[q + 1]; ++h) hits.emplace_back(part.distances[h], part.ids[h]);
      std::sort(hits.begin(), hits.end(), [&](const auto& a, const auto& b) {
        return closer(a.first, a.second, b.first, b.second);
      });
      int64_t at = result.lims[q];
      for (const auto& [distance, id] : hits) {
        result.distances[at] = distance;
        result.ids[at++] = id;
      }
    }
  });
  return result;
}

}  // namespace quiver
