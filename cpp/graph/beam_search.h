// Beam search over a fixed-degree graph (the CPU search of the graph index, also used by its build
// to find insertion candidates): a pool of the `width` closest rows seen so far, sorted; repeatedly
// expand the closest row not yet expanded (compute the keys of its unvisited neighbours, insert
// those that beat the pool's worst), until every row in the pool is expanded.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/graph/fixed_degree_graph.h"
#include "cpp/graph/graph_distance.h"
#include "cpp/graph/visited.h"
#include "cpp/select/topk.h"

namespace quiver {

// What a search reads: the graph and the vectors of its rows.
struct GraphView {
  const FixedDegreeGraph* graph = nullptr;
  const float* vectors = nullptr;  // graph->rows x dim
  int64_t dim = 0;
  KeyFn key = nullptr;
};

// Rows a search may return. Rows it may not are still traversed (they are waypoints: skipping them
// would cut paths to allowed rows), only kept out of the results.
struct RowFilter {
  const uint8_t* removed = nullptr;  // per row, nonzero: a tombstone; nullptr: none
  const IdFilter* ids_filter = nullptr;  // over user ids; nullptr or no bits: every id
  const int64_t* ids = nullptr;          // row -> user id, for ids_filter
  bool active() const { return removed != nullptr || (ids_filter != nullptr && ids_filter->bits != nullptr); }
  bool allows(int32_t row) const {
    if (removed != nullptr && removed[row]) return false;
    if (ids_filter != nullptr && ids_filter->bits != nullptr && !ids_filter->allows(ids[row])) return false;
    return true;
  }
};

struct Neighbour {
  float key;
  int32_t row;
  bool operator<(const Neighbour& o) const { return key < o.key || (key == o.key && row < o.row); }
};

// Per-thread memory of searches, reused across queries (no allocation per query).
struct BeamScratch {
  VisitedSet visited;
  std::vector<Neighbour> pool;      // sorted, closest first
  std::vector<uint8_t> expanded;    // parallel to pool
  std::vector<Neighbour> accepted;  // filtered searches: the best allowed rows, sorted
  std::vector<int32_t> fresh;       // unvisited neighbours of the row being expanded
};

// Searches `query` from `entries` with a pool of `width` (>= 1) rows and writes the best min(k, found)
// rows the filter allows (every row when filter is null or inactive) to `out`, closest first, ties
// by row. With an active filter every row whose key was computed is a result candidate, not only
// those left in the pool, so permissive filters keep the recall of unfiltered searches.
// seen, unless null, receives every row whose key was computed (unsorted): the graph build's
// candidates, which include the far rows on the way to the query.
void beam_search(const GraphView& view, const float* query, const int32_t* entries, int64_t n_entries,
                 int64_t width, int64_t k, const RowFilter* filter, BeamScratch& scratch,
                 std::vector<Neighbour>& out, std::vector<Neighbour>* seen = nullptr);

}  // namespace quiver
