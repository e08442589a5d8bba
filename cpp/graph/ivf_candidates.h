// The first, coarse k-NN graph of the approximate build, as the Faiss GPU paper builds its graphs
// (Johnson, Douze, Jegou 2017, section on k-NN graphs): k-means partitions the points into lists,
// and every point's candidates are computed exactly among the points of its own list and of the
// lists whose centroids are nearest its list's centroid. One list's points share those lists, so
// each list is one small exact search (GEMM-shaped), and the lists run in parallel.
#pragma once

#include <cstdint>

#include "cpp/core/metric.h"

namespace quiver {

class Progress;
class NeighbourLists;
class ThreadPool;

struct IvfCandidateOptions {
  int64_t lists = 1;   // k-means clusters, 1 .. n
  int64_t probes = 1;  // lists searched per list, its own included (clamped to `lists`)
  uint64_t seed = 1234;
};

// x: n x dim host floats, finite, normalised for cosine. Offers every point its exact best
// candidates within the probed lists (and, symmetrically, offers it to them). Progress: 0 .. 0.25
// k-means, 0.25 .. 1 the searches. Returns true when every list probed every list: the candidates
// are then the exact neighbours and nothing is left to refine.
bool ivf_candidates(ThreadPool& pool, Metric metric, int64_t dim, int64_t n, const float* x,
                    const IvfCandidateOptions& options, NeighbourLists& lists, const Progress& progress);

}  // namespace quiver
