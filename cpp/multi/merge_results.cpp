#include "cpp/multi/merge_results.h"

#include <algorithm>
#include <limits>

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

// A k-NN list's entry as merge_knn orders it: ascending (key, id); Head{} is a missing entry.
struct Head {
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  float key = std::numeric_limits<float>::infinity();
  int64_t id = kNone;
  bool before(const Head& other) const { return key < other.key || (key == other.key && id < other.id); }
};

Head head_of(const PartResult& part, int64_t at, bool larger_closer) {
  const int64_t id = part.ids[at];
  if (id < 0) return Head{};
  return Head{larger_closer ? -part.distances[at] : part.distances[at], id};
}

// Queries per pool task: enough to amortise the task, few enough to spread a small batch.
constexpr int64_t kQueriesPerTask = 64;

}  // namespace

void merge_knn(ThreadPool& pool, Metric metric, int64_t nq, int64_t k, const PartResult* parts, int64_t parts_count,
               float* distances, int64_t* ids) {
  const bool larger_closer = larger_is_closer(metric);
  const size_t count = static_cast<size_t>(parts_count);
  const int64_t tasks = (nq + kQueriesPerTask - 1) / kQueriesPerTask;
  pool.parallel_for(tasks, [&](int64_t task) {
    // Each part's head, as an ascending key: the distance (negated where larger is closer), then the
    // id; a missing entry (id -1) or an exhausted list is (+inf, max id), after every real entry.
    std::vector<Head> heads(count);
    std::vector<int64_t> next(count);
    const int64_t end = std::min(nq, (task + 1) * kQueriesPerTask);
    for (int64_t q = task * kQueriesPerTask; q < end; ++q) {
      const int64_t row = q * k;
      auto load = [&](size_t p) {
        const int64_t at = next[p]++;
        heads[p] = at < k ? head_of(parts[p], row + at, larger_closer) : Head{};
      };
      for (size_t p = 0; p < count; ++p) {
        next[p] = 0;
        load(p);
      }
      for (int64_t out = 0; out < k; ++out) {
        size_t best = 0;  // parts are few: a linear scan of their heads
        for (size_t p = 1; p < count; ++p)
          if (heads[p].before(heads[best])) best = p;
        const bool missing = heads[best].id == Head::kNone;
        distances[row + out] = missing ? missing_distance(metric) : larger_closer ? -heads[best].key : heads[best].key;
        ids[row + out] = missing ? -1 : heads[best].id;
        load(best);
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
