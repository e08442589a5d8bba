#include "cpp/exact/range.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/exact/tiling.h"

namespace quiver {

namespace {

// Relative slack on the tile threshold: the GEMM form of a distance can be off by a few ulps of the
// norms involved, so candidates within this margin are kept and decided by their exact distance.
constexpr float kThresholdSlack = 1e-4f;

struct RangeSink {
  ScanSink sink;  // first member: accept() recovers the RangeSink
  std::vector<Candidate>* out;
  const IdFilter* filter;
  const int64_t* ids;

  static void accept(ScanSink* s, float key, int64_t index) {
    auto* self = reinterpret_cast<RangeSink*>(s);
    if (self->filter && !self->filter->allows(self->ids ? self->ids[index] : index)) return;
    self->out->push_back({key, index});
  }
};

}  // namespace

RangeResult exact_range(ThreadPool& pool, const Database& db, const Queries& queries, float radius,
                        const IdFilter& filter) {
  const int64_t nq = queries.nq;
  const bool l2 = db.metric == Metric::l2;
  // The largest squared norm of the rows, for the slack: cosine rows are unit vectors; otherwise the
  // stored norms when the caller has them (indexes do, for every metric).
  float max_norm = db.metric == Metric::cosine ? 1.0f : 0.0f;
  if (db.metric != Metric::cosine)
    for (int64_t i = 0; i < db.n; ++i)
      max_norm = std::max(max_norm, db.norms ? db.norms[i] : squared_norm(db.x + i * db.dim, db.dim));

  const TilePlan plan = plan_tiles(nq, db.n, /*max_chunks=*/16);
  const int64_t chunks = plan.row_chunks;
  std::vector<std::vector<Candidate>> found(nq * chunks);
  const IdFilter* active_filter = filter.bits ? &filter : nullptr;
  const ScanFn scan = best_scan();

  pool.parallel_for(plan.tasks(), [&](int64_t t) {
    const TileTask task = plan.task(t, nq, db.n);
    const int64_t chunk = t % chunks;
    std::vector<RangeSink> sinks(task.query_end - task.query_begin);
    for (int64_t q = task.query_begin; q < task.query_end; ++q) {
      RangeSink& s = sinks[q - task.query_begin];
      const float qnorm = squared_norm(queries.x + q * db.dim, db.dim);
      // Tile keys are ||y||^2 - 2<q,y> (L2) or -<q,y>; turn the radius into a bound on them.
      const float bound = l2 ? radius - qnorm : -radius;
      const float slack = kThresholdSlack * (l2 ? qnorm + max_norm : std::sqrt(qnorm * max_norm));
      s.sink.threshold = std::nextafter(bound + slack, INFINITY);
      s.sink.accept = &RangeSink::accept;
      s.out = &found[q * chunks + chunk];
      s.filter = active_filter;
      s.ids = db.ids;
    }
    std::vector<float> tile(kQueryBlock * kDatabaseBlock);
    const float* bias = l2 ? db.norms : nullptr;
    for_each_tile(db, queries, task, tile.data(),
                  [&](int64_t q, const float* row, int64_t row_begin, int64_t count) {
                    scan(row, bias ? bias + row_begin : nullptr, count, row_begin,
                         &sinks[q - task.query_begin].sink);
                  });
  });

  // Exact check and ordering, per query.
  std::vector<std::vector<Candidate>> hits(nq);
  pool.parallel_for(nq, [&](int64_t q) {
    const float* query = queries.x + q * db.dim;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      for (const Candidate& c : found[q * chunks + chunk]) {
        const float exact = exact_distance(db.metric, query, db.x + c.index * db.dim, db.dim);
        if (l2 ? exact <= radius : exact >= radius) hits[q].push_back({l2 ? exact : -exact, c.index});
      }
      std::vector<Candidate>().swap(found[q * chunks + chunk]);
    }
    std::sort(hits[q].begin(), hits[q].end());
  });

  RangeResult result;
  result.lims.resize(nq + 1);
  result.lims[0] = 0;
  for (int64_t q = 0; q < nq; ++q)
    result.lims[q + 1] = result.lims[q] + static_cast<int64_t>(hits[q].size());
  result.ids.resize(result.lims[nq]);
  result.distances.resize(result.lims[nq]);
  for (int64_t q = 0; q < nq; ++q) {
    int64_t at = result.lims[q];
    for (const Candidate& c : hits[q]) {
      result.ids[at] = db.ids ? db.ids[c.index] : c.index;
      result.distances[at] = l2 ? c.key : -c.key;
      ++at;
    }
  }
  return result;
}

}  // namespace quiver
