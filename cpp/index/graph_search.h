// The searches of the graph index over its stored state: k-NN by beam search (graph/beam_search.h),
// one query at a time per thread of the context's pool, and range search by an exact scan.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "cpp/core/thread_pool.h"
#include "cpp/exact/range.h"
#include "cpp/graph/beam_search.h"
#include "cpp/graph/entry_layer.h"
#include "cpp/graph/reduced_space.h"

namespace quiver {

// A read-only view of a graph index.
struct GraphData {
  const FixedDegreeGraph* graph = nullptr;
  const float* vectors = nullptr;  // graph->rows x dim, normalised for cosine
  int64_t dim = 0;
  Metric metric = Metric::l2;
  const int64_t* ids = nullptr;       // row -> user id
  const uint8_t* removed = nullptr;   // row -> tombstone; null when there are none
  const int32_t* entries = nullptr;  // where searches start
  int64_t n_entries = 0;
  const ReducedSpace* walk = nullptr;  // the projection the walk reads (graph/walk_space.h); null: vectors
  const EntryLayer* layer = nullptr;   // where a walk over the vectors starts (graph/entry_layer.h); null: entries
};

// Search scratch (visited sets sized to the graph) kept between calls, one per concurrent task, so
// that neither a batch nor a single query allocates or clears per-row memory.
class ScratchPool {
 public:
  std::unique_ptr<BeamScratch> acquire();
  void release(std::unique_ptr<BeamScratch> scratch);
  void clear();
  int64_t memory_bytes() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<BeamScratch>> free_;
};

// k-NN of nq queries (normalised for cosine), width >= k. With a walk space the walk reads the
// projections and the 2 x width best rows it computed are re-ranked on the full vectors. Results the
// graph search cannot fill (a
// filter or tombstones leaving fewer than k allowed rows among those the search reached) come from
// an exact scan of that query over every allowed row, so a query gets k results whenever k rows
// qualify. Rows padded with id -1 and the metric's missing distance.
void graph_knn_search(ThreadPool& pool, const GraphData& data, ScratchPool& scratch, const float* queries,
                      int64_t nq, int64_t k, int64_t width, const IdFilter& filter, float* distances,
                      int64_t* ids);

// Every allowed row within radius of each query (L2: squared distance <= radius; inner product and
// cosine: similarity >= radius), closest first: an exact scan of all rows per query. A graph walk
// cannot promise to find all of a radius's points; this does.
RangeResult graph_range_scan(ThreadPool& pool, const GraphData& data, const float* queries, int64_t nq,
                             float radius, const IdFilter& filter);

}  // namespace quiver
