// Pruning a point's candidate neighbours to a fixed degree (the "occlusion" or relative-neighbourhood
// rule of HNSW's heuristic, NSG and Vamana): candidates are taken closest first, and one is kept
// unless a neighbour already kept is closer to it than the point itself is (scaled by alpha) - the
// kept neighbour already leads there. What this leaves is a sparse graph whose edges point in
// diverse directions, which greedy search can navigate; the free slots are then filled with the
// closest candidates left out, so rows of points with enough candidates are full.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cpp/core/thread_pool.h"
#include "cpp/graph/beam_search.h"
#include "cpp/graph/fixed_degree_graph.h"
#include "cpp/graph/graph_distance.h"

namespace quiver {

struct PruneParams {
  int32_t degree = 32;
  // Occlusion slack on the prune key (graph_distance.h's prune_key): candidate c is dropped when a
  // kept s has alpha * key(s, c) < key(p, c). 1 is the strict rule; above 1 keeps fewer, longer
  // edges. Only for squared L2 keys (L2, cosine); inner-product pruning uses 1.
  float alpha = 1.0f;
  // Fill free slots with the closest dropped candidates.
  bool fill = true;
};

// The vectors pruning measures between.
struct PruneSpace {
  const float* vectors = nullptr;
  int64_t dim = 0;
  KeyFn key = nullptr;  // prune_key(metric)
  bool l2_keys = true;  // alpha applies
};

// candidates: sorted closest first by key to the point, no duplicates, the point itself excluded.
// Writes at most params.degree rows to out (kept first, then fill) and returns how many.
int32_t prune_candidates(const PruneSpace& space, const Neighbour* candidates, int64_t n_candidates,
                         const PruneParams& params, int32_t* out, std::vector<uint8_t>& kept);

// Rows chosen by pruning each point's candidates (no fill): candidates(p, list) fills p's list,
// in any order (it is sorted here, duplicates and p itself dropped). Parallel over points;
// candidates is called concurrently, with a per-task scratch it may use.
using CandidateFn = std::function<void(int64_t p, std::vector<Neighbour>& list, BeamScratch& scratch)>;
FixedDegreeGraph choose_rows(ThreadPool& pool, const PruneSpace& space, int64_t n, const CandidateFn& candidates,
                             const PruneParams& params);
// The same for points first .. last - 1 only, into their rows of `chosen`: for candidates made in
// chunks of points.
void choose_rows(ThreadPool& pool, const PruneSpace& space, int64_t first, int64_t last,
                 const CandidateFn& candidates, const PruneParams& params, FixedDegreeGraph& chosen);

// The final rows from chosen ones: the chosen edges are added in reverse to the lists of their
// targets (a point is then reachable from the neighbours it chose), and each point's chosen row,
// reverse edges and k-NN list (knn: n x k rows, keys: their prune keys) are pruned again, with fill.
FixedDegreeGraph merge_reverse_edges(ThreadPool& pool, const PruneSpace& space, const FixedDegreeGraph& chosen,
                                     const int32_t* knn, const float* keys, int64_t k, const PruneParams& params);

}  // namespace quiver
