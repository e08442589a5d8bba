// Makes every row of a graph reachable from the entry point, so that no vector is unfindable:
// a breadth-first search from the entry marks what is reachable; each row left out is linked from
// the reachable row closest to it (found by searching the graph for its vector, which only ever
// reaches reachable rows) that has a slot to spare, and everything reachable from it joins the
// reached set. A full row gives up the slot whose target has the most other in-edges (the edge whose
// loss is least likely to cut anything off), never one this pass added; the passes repeat until a
// search from the entry reaches every row.
#pragma once

#include <cstdint>
#include <functional>

#include "cpp/graph/beam_search.h"
#include "cpp/graph/fixed_degree_graph.h"

namespace quiver {

// Returns the number of edges added. view.graph is the graph to repair (modified through `graph`).
// width: the pool of the searches that find where to link an unreachable row. before_change (may be
// empty): called with a row just before the pass changes it (an insertion's undo saves it there).
int64_t connect_from_entry(FixedDegreeGraph& graph, const GraphView& view, int32_t entry, int64_t width,
                           const std::function<void(int32_t)>& before_change = {});

}  // namespace quiver
