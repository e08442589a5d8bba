// NN-descent (Dong, Moses, Li, "Efficient k-nearest neighbor graph construction for generic
// similarity measures", WWW 2011): a neighbour of a neighbour is likely a neighbour. Each iteration
// joins, for every point, the pairs among a sample of its neighbours and reverse neighbours, new
// ones against new and old ones, and offers each pair to both lists; it stops when an iteration
// changes fewer than delta * n * capacity list entries. Here it refines the lists that
// ivf_candidates started.
//
// Deterministic for a seed, whatever the thread count: samples come from per-point generators, the
// reverse lists are sampled in one sequential pass, and a list keeps the best of all offers made to
// it in an iteration whatever their order (neighbour_lists.h).
#pragma once

#include <cstdint>
#include <functional>

#include "cpp/core/metric.h"

namespace quiver {

class Progress;
class NeighbourLists;
class ThreadPool;

struct NnDescentOptions {
  // Called after each iteration; returning true stops the refinement (e.g. a recall target is met).
  std::function<bool()> good_enough;
  int64_t max_iterations = 8;
  // Neighbours (and, separately, reverse neighbours) sampled per point and iteration: rho * capacity
  // in the paper's terms.
  int64_t sample = 16;
  double delta = 0.002;  // stop when fewer than delta * n * capacity entries changed
  uint64_t seed = 1234;
};

struct NnDescentStats {
  int64_t iterations = 0;
  int64_t distances = 0;  // distance computations, all iterations
};

// x: n x dim host floats, finite, normalised for cosine; lists: filled, entries not yet joined
// flagged new or inserted_now. Progress: the fraction of max_iterations run.
NnDescentStats nn_descent(ThreadPool& pool, Metric metric, int64_t dim, int64_t n, const float* x,
                          const NnDescentOptions& options, NeighbourLists& lists, const Progress& progress);

// Fills every list that holds fewer than capacity entries with other points (random ones, with their
// exact keys), so that each point has a full list to refine and to answer with.
void complete_lists(ThreadPool& pool, Metric metric, int64_t dim, int64_t n, const float* x, uint64_t seed,
                    NeighbourLists& lists);

}  // namespace quiver
