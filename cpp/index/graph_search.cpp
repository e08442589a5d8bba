#include "cpp/index/graph_search.h"

#include <algorithm>

#include "cpp/blas/gemm.h"

namespace quiver {

namespace {

// Queries per parallel task: a few tasks per thread balance uneven search lengths.
constexpr int64_t kTasksPerThread = 4;
// A projected walk re-ranks this many times its width of the best rows it computed: the walk's
// order is approximate, and twice the pool keeps the recall of a full walk of the same width
// (Fashion-MNIST, widths 10 .. 48).
constexpr int64_t kRerankFactor = 2;

// The walk over data.walk's projections for one query: the best allowed rows among those it
// computed, re-ranked on the full vectors, closest first, at most k.
void projected_search(const GraphData& data, const GraphView& view, const RowFilter& rows, const float* query,
                      const float* projected, int64_t width, int64_t k, BeamScratch& scratch,
                      std::vector<Neighbour>& seen, std::vector<Neighbour>& found) {
  beam_search(view, projected, data.entries, data.n_entries, width, width, nullptr, scratch, found, &seen);
  if (rows.active())
    seen.erase(std::remove_if(seen.begin(), seen.end(), [&](const Neighbour& c) { return !rows.allows(c.row); }),
               seen.end());
  const size_t keep = std::min(seen.size(), static_cast<size_t>(kRerankFactor * width));
  std::partial_sort(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(keep), seen.end());
  seen.resize(keep);
  const KeyFn key = search_key(data.metric);
  for (Neighbour& c : seen) c.key = key(query, data.vectors + int64_t(c.row) * data.dim, data.dim);
  const size_t out = std::min(seen.size(), static_cast<size_t>(k));
  std::partial_sort(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(out), seen.end());
  found.assign(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(out));
}

// Every allowed row of one query, the best k by (key, row), closest first.
void scan_rows(const GraphData& data, KeyFn key, const RowFilter& filter, const float* query, int64_t k,
               std::vector<Neighbour>& out) {
  out.clear();
  for (int64_t r = 0; r < data.graph->rows; ++r)
    if (filter.allows(static_cast<int32_t>(r)))
      out.push_back({key(query, data.vectors + r * data.dim, data.dim), static_cast<int32_t>(r)});
  const size_t keep = std::min(out.size(), static_cast<size_t>(k));
  std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(keep), out.end());
  out.resize(keep);
}

}  // namespace

std::unique_ptr<BeamScratch> ScratchPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      std::unique_ptr<BeamScratch> s = std::move(free_.back());
      free_.pop_back();
      return s;
    }
  }
  return std::make_unique<BeamScratch>();
}

void ScratchPool::release(std::unique_ptr<BeamScratch> scratch) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(scratch));
}

void ScratchPool::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.clear();
}

int64_t ScratchPool::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t bytes = 0;
  for (const auto& s : free_) bytes += s->visited.memory_bytes();
  return bytes;
}

void graph_knn_search(ThreadPool& pool, const GraphData& data, ScratchPool& scratch, const float* queries,
                      int64_t nq, int64_t k, int64_t width, const IdFilter& filter, float* distances,
                      int64_t* ids) {
  GraphView view;
  view.graph = data.graph;
  view.vectors = data.vectors;
  view.dim = data.dim;
  view.key = search_key(data.metric);
  RowFilter rows;
  rows.removed = data.removed;
  rows.ids_filter = &filter;
  rows.ids = data.ids;
  const float missing = missing_distance(data.metric);
  const bool projected = data.walk != nullptr && data.walk->dim > 0;
  GraphView walk_view = view;
  if (projected) {
    walk_view.vectors = data.walk->vectors.data();
    walk_view.dim = data.walk->dim;
    walk_view.key = search_key(Metric::l2);
  }
  const int64_t per_task = std::max<int64_t>(1, nq / (pool.threads() * kTasksPerThread));
  const int64_t tasks = (nq + per_task - 1) / per_task;
  pool.parallel_for(tasks, [&](int64_t t) {
    std::unique_ptr<BeamScratch> s = scratch.acquire();
    std::vector<Neighbour> found, seen;
    const int64_t first = t * per_task, last = std::min(nq, (t + 1) * per_task);
    std::vector<float> projections;
    std::vector<int32_t> starts;
    if (projected) {  // the task's queries on the walk's directions, one GEMM
      projections.resize(static_cast<size_t>((last - first) * walk_view.dim));
      gemm_abt(last - first, walk_view.dim, data.dim, 1.0f, queries + first * data.dim, data.dim,
               data.walk->basis.data(), data.dim, projections.data(), walk_view.dim);
    }
    for (int64_t q = first; q < last; ++q) {
      const float* query = queries + q * data.dim;
      int64_t n_found = 0;
      if (data.graph->rows > 0) {
        if (projected)
          projected_search(data, walk_view, rows, query, &projections[(q - first) * walk_view.dim], width, k, *s,
                           seen, found);
        else {
          const WalkStarts from =
              walk_starts(data.layer, data.entries, data.n_entries, data.dim, view.key, query, *s, found, starts);
          beam_search(view, query, from.rows, from.count, width, k, &rows, *s, found);
        }
        if (static_cast<int64_t>(found.size()) < k) scan_rows(data, view.key, rows, query, k, found);
        n_found = static_cast<int64_t>(found.size());
      }
      for (int64_t j = 0; j < k; ++j) {
        distances[q * k + j] = j < n_found ? key_to_distance(data.metric, found[j].key) : missing;
        ids[q * k + j] = j < n_found ? data.ids[found[j].row] : -1;
      }
    }
    scratch.release(std::move(s));
  });
}

RangeResult graph_range_scan(ThreadPool& pool, const GraphData& data, const float* queries, int64_t nq,
                             float radius, const IdFilter& filter) {
  const KeyFn key = search_key(data.metric);
  RowFilter rows;
  rows.removed = data.removed;
  rows.ids_filter = &filter;
  rows.ids = data.ids;
  const float key_radius = data.metric == Metric::l2 ? radius : -radius;
  std::vector<std::vector<Neighbour>> hits(static_cast<size_t>(nq));
  pool.parallel_for(nq, [&](int64_t q) {
    const float* query = queries + q * data.dim;
    std::vector<Neighbour>& h = hits[static_cast<size_t>(q)];
    for (int64_t r = 0; r < data.graph->rows; ++r) {
      if (!rows.allows(static_cast<int32_t>(r))) continue;
      const float k = key(query, data.vectors + r * data.dim, data.dim);
      if (k <= key_radius) h.push_back({k, static_cast<int32_t>(r)});
    }
    std::sort(h.begin(), h.end());
  });
  RangeResult result;
  result.lims.assign(static_cast<size_t>(nq + 1), 0);
  for (int64_t q = 0; q < nq; ++q) result.lims[q + 1] = result.lims[q] + static_cast<int64_t>(hits[q].size());
  result.ids.reserve(static_cast<size_t>(result.lims[nq]));
  result.distances.reserve(static_cast<size_t>(result.lims[nq]));
  for (const auto& h : hits)
    for (const Neighbour& n : h) {
      result.ids.push_back(data.ids[n.row]);
      result.distances.push_back(key_to_distance(data.metric, n.key));
    }
  return result;
}

}  // namespace quiver
