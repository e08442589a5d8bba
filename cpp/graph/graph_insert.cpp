#include "cpp/graph/graph_insert.h"

#include <algorithm>
#include <vector>

#include "cpp/graph/connectivity.h"
#include "cpp/graph/graph_build.h"

namespace quiver {

void InsertUndo::restore(FixedDegreeGraph& graph) const {
  const size_t degree = static_cast<size_t>(graph.degree);
  for (size_t i = rows.size(); i-- > 0;)
    std::copy(values.begin() + i * degree, values.begin() + (i + 1) * degree, graph.row(rows[i]));
}

void insert_rows(FixedDegreeGraph& graph, Metric metric, const float* vectors, int64_t dim,
                 const std::vector<int32_t>& entries, const EntryLayer* layer, int64_t first,
                 const uint8_t* removed, const InsertParams& params, InsertUndo& undo) {
  // Saves an old row before it changes (a new row needs no saving: the caller drops them all).
  const auto save = [&](int32_t q) {
    if (q >= first) return;
    // Values first: if the row number then fails to fit, restore() never reads the extra values.
    undo.values.insert(undo.values.end(), graph.row(q), graph.row(q) + graph.degree);
    undo.rows.push_back(q);
  };
  const int32_t entry = entries.front();
  GraphView view;
  view.graph = &graph;
  view.vectors = vectors;
  view.dim = dim;
  view.key = search_key(metric);
  PruneSpace space;
  space.vectors = vectors;
  space.dim = dim;
  space.key = prune_key(metric);
  space.l2_keys = metric != Metric::inner_product;
  const int32_t degree = graph.degree;
  const int64_t width = std::max<int64_t>(params.width, degree);

  BeamScratch scratch;
  std::vector<Neighbour> found, candidates;
  std::vector<int32_t> starts;
  std::vector<uint8_t> kept;
  std::vector<int32_t> row(static_cast<size_t>(degree));
  candidates.reserve(static_cast<size_t>(width + degree + 1));
  for (int64_t p = first; p < graph.rows; ++p) {
    const float* x = vectors + p * dim;
    // From near p, as the build's refine and every query start: the graph's edges are local, and a
    // walk from the fixed entries misses some of p's neighbours in clustered data.
    const WalkStarts from =
        walk_starts(layer, entries.data(), static_cast<int64_t>(entries.size()), dim, view.key, x, scratch, found,
                    starts);
    beam_search(view, x, from.rows, from.count, width, width, nullptr, scratch, found);
    candidates.clear();
    for (const Neighbour& f : found)
      if (f.row != p && (removed == nullptr || !removed[f.row]))
        candidates.push_back({prune_key_of_search_key(metric, f.key), f.row});
    const int32_t chosen = prune_candidates(space, candidates.data(), static_cast<int64_t>(candidates.size()),
                                            params.prune, graph.row(p), kept);
    // Reverse edges: each chosen neighbour q gets p, pruned in with q's current row.
    bool reachable = false;
    for (int32_t j = 0; j < chosen; ++j) {
      const int32_t q = graph.row(p)[j];
      save(q);
      int32_t* q_row = graph.row(q);
      const int32_t used = graph.used(q);
      if (used < degree) {
        q_row[used] = static_cast<int32_t>(p);
        reachable = true;
        continue;
      }
      const float* y = vectors + static_cast<int64_t>(q) * dim;
      candidates.clear();
      for (int32_t s = 0; s < used; ++s)
        candidates.push_back({space.key(y, vectors + static_cast<int64_t>(q_row[s]) * dim, dim), q_row[s]});
      candidates.push_back({space.key(y, x, dim), static_cast<int32_t>(p)});
      std::sort(candidates.begin(), candidates.end());
      const int32_t n_row = prune_candidates(space, candidates.data(), static_cast<int64_t>(candidates.size()),
                                             params.prune, row.data(), kept);
      std::fill(q_row, q_row + degree, kEmptySlot);
      std::copy(row.begin(), row.begin() + n_row, q_row);
      reachable = reachable || std::find(q_row, q_row + n_row, static_cast<int32_t>(p)) != q_row + n_row;
    }
    // Every neighbour pruned p away (or, every other row being a tombstone, it has none): its closest
    // neighbour (else the entry) links it anyway, in a free slot or its last one (a fill edge, the
    // least useful), or p could never be found.
    if (!reachable) {
      if (chosen == 0) graph.row(p)[0] = entry;
      const int32_t anchor = graph.row(p)[0];
      save(anchor);
      const int32_t used = graph.used(anchor);
      graph.row(anchor)[used < degree ? used : degree - 1] = static_cast<int32_t>(p);
    }
  }
  // Re-pruning an old row may have dropped the only edge into a third row: every row made reachable
  // from the entry again, as at the end of a build (connectivity.h; a breadth-first pass over the
  // whole graph, about 0.1 s a million rows).
  connect_from_entry(graph, view, entry, width, save);
}

}  // namespace quiver
