#include "cpp/graph/connectivity.h"

#include <deque>
#include <vector>

#include "cpp/core/error.h"

namespace quiver {

namespace {

// Passes over the graph at most. Every pass links every row it finds unreachable; a replaced edge
// can strand only rows that no other edge reaches; more than a few passes means a bug.
constexpr int kMaxPasses = 64;

// Marks what is reachable from `start` and not yet marked.
void mark_reachable(const FixedDegreeGraph& graph, int32_t start, std::vector<uint8_t>& reached,
                    std::deque<int32_t>& queue) {
  if (reached[start]) return;
  reached[start] = 1;
  queue.push_back(start);
  while (!queue.empty()) {
    const int32_t r = queue.front();
    queue.pop_front();
    const int32_t* row = graph.row(r);
    for (int32_t j = 0; j < graph.degree && row[j] != kEmptySlot; ++j)
      if (!reached[row[j]]) {
        reached[row[j]] = 1;
        queue.push_back(row[j]);
      }
  }
}

// The slot of row `from` that a new edge may take: a free one, else the unpinned slot whose target
// has the most in-edges, if that target keeps another in-edge (or, with any_target, at all); -1 if
// none. Pinned slots hold edges this pass added: replacing them would undo its work.
int32_t free_slot(const FixedDegreeGraph& graph, int32_t from, const std::vector<int32_t>& in_degree,
                  const std::vector<uint8_t>& pinned, bool any_target) {
  const int32_t* row = graph.row(from);
  int32_t slot = -1;
  for (int32_t j = 0; j < graph.degree; ++j) {
    if (row[j] == kEmptySlot) return j;
    if (pinned[static_cast<size_t>(from) * graph.degree + j]) continue;
    if (slot < 0 || in_degree[row[j]] > in_degree[row[slot]]) slot = j;
  }
  if (slot >= 0 && !any_target && in_degree[row[slot]] < 2) return -1;
  return slot;
}

}  // namespace

int64_t connect_from_entry(FixedDegreeGraph& graph, const GraphView& view, int32_t entry, int64_t width,
                           const std::function<void(int32_t)>& before_change) {
  const int64_t n = graph.rows;
  if (n <= 1 || graph.degree == 0) return 0;
  std::vector<int32_t> in_degree(static_cast<size_t>(n), 0);
  for (int32_t v : graph.adjacency)
    if (v != kEmptySlot) ++in_degree[v];
  std::vector<uint8_t> pinned(graph.adjacency.size(), 0);
  std::vector<uint8_t> reached;
  std::deque<int32_t> queue;
  BeamScratch scratch;
  std::vector<Neighbour> found;
  int64_t added = 0;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    reached.assign(static_cast<size_t>(n), 0);
    mark_reachable(graph, entry, reached, queue);
    int64_t linked = 0;
    for (int64_t u = 0; u < n; ++u) {
      if (reached[u]) continue;
      // The closest reachable rows (the search only reaches those), best first; the first with a
      // slot to spare links u.
      beam_search(view, view.vectors + u * view.dim, &entry, 1, width, width, nullptr, scratch, found);
      int32_t from = -1, slot = -1;
      for (bool any_target : {false, true}) {
        for (const Neighbour& f : found) {
          slot = free_slot(graph, f.row, in_degree, pinned, any_target);
          if (slot >= 0) {
            from = f.row;
            break;
          }
        }
        if (from >= 0) break;
      }
      if (from < 0) fail(Status::internal, "graph build: no row can link row ", u);
      if (before_change) before_change(from);
      int32_t& edge = graph.row(from)[slot];
      if (edge != kEmptySlot) --in_degree[edge];
      edge = static_cast<int32_t>(u);
      ++in_degree[u];
      pinned[static_cast<size_t>(from) * graph.degree + slot] = 1;
      mark_reachable(graph, static_cast<int32_t>(u), reached, queue);
      ++linked;
    }
    added += linked;
    if (linked == 0) return added;
  }
  fail(Status::internal, "graph build: rows still unreachable after ", kMaxPasses, " connectivity passes");
}

}  // namespace quiver
