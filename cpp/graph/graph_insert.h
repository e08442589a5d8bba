// Inserting rows into a built graph with local repair (as HNSW and Vamana insert): the new row's
// candidates are the closest rows a search of the graph finds for it, pruned to the degree
// (prune.h); each chosen neighbour then gets the new row as a reverse edge, in a free slot or by
// pruning its row plus the new one again. Rows are inserted one after another, each search seeing
// the rows inserted before it.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/core/metric.h"
#include "cpp/graph/beam_search.h"
#include "cpp/graph/entry_layer.h"
#include "cpp/graph/fixed_degree_graph.h"
#include "cpp/graph/prune.h"

namespace quiver {

struct InsertParams {
  PruneParams prune;
  int64_t width = 128;  // pool of the search for candidates
};

// The rows before `first` that an insertion changed, as they were, so a failed insertion (out of
// memory part way) can be undone: rows[i]'s old content is values[i * degree, (i + 1) * degree).
struct InsertUndo {
  std::vector<int32_t> rows;
  std::vector<int32_t> values;
  void restore(FixedDegreeGraph& graph) const;
};

// graph: rows [first, graph.rows) are new and empty; vectors covers every row (normalised for
// cosine). removed: per row, nonzero for tombstones (never chosen as neighbours), or null.
// Allocates only small per-call buffers.
// entries: where the searches start (graph_build.h), at least one; layer: where they start instead
// (the rows of a walk of it, entry_layer.h), or null.
// undo: receives each old row before its first change (saved before the change, so an exception
// thrown anywhere leaves undo able to restore every changed row).
void insert_rows(FixedDegreeGraph& graph, Metric metric, const float* vectors, int64_t dim,
                 const std::vector<int32_t>& entries, const EntryLayer* layer, int64_t first,
                 const uint8_t* removed, const InsertParams& params, InsertUndo& undo);

}  // namespace quiver
