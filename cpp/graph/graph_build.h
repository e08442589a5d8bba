// Building the fixed-degree graph of a whole data set: the k-NN graph (knn_graph.h: exact, or
// approximate on large sets), pruned to the degree (prune.h), the medoid as entry point, and a
// connectivity pass (connectivity.h) so every row is reachable from it. On the CPU, wide vectors
// (L2, cosine) are built on a reduced copy (reduced_space.h). Inserting rows into a built graph
// (local repair) is graph_insert.h.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/core/context.h"
#include "cpp/core/metric.h"
#include "cpp/graph/entry_layer.h"
#include "cpp/graph/fixed_degree_graph.h"
#include "cpp/graph/knn_graph.h"
#include "cpp/graph/prune.h"

namespace quiver {

struct GraphBuildParams {
  PruneParams prune;
  int64_t knn_k = 64;  // neighbours of the k-NN graph pruning starts from (capped at n - 1)
  KnnGraphMethod knn_method = KnnGraphMethod::automatic;
  // The refining pass (graph_build.cpp, step 2): pool width of the search for each point, 0 to skip
  // the pass, and how many of the rows the search computed (the closest) are candidates.
  int64_t refine_width = 64;
  int64_t refine_candidates = 128;
  // Entry points (spread_entries).
  int64_t entry_points = 32;
  // Pool width of the searches of the connectivity pass.
  int64_t connect_width = 64;
  // Reports between the build's steps and pieces of them (cpp/core/progress.h); may be empty.
  ProgressFn progress;
};

struct BuiltGraph {
  FixedDegreeGraph graph;
  // Where searches start: the medoid first, then rows spread over the data (spread_entries); empty
  // only for an empty set.
  std::vector<int32_t> entries;
  // The entry layer the refine's searches started from, when they ran over the full vectors (empty
  // otherwise, and for sets below the layer's size).
  EntryLayer layer;
};

// The prune key of a pair from its search key (graph_distance.h): cosine search keys are minus the
// similarity of unit vectors, their prune key the squared L2 distance, 2 - 2 cos.
inline float prune_key_of_search_key(Metric metric, float key) {
  return metric == Metric::cosine ? 2.0f + 2.0f * key : key;
}

// The row nearest the mean of the n rows (squared L2, whatever the metric: a central starting point).
int32_t medoid(const float* vectors, int64_t n, int64_t dim);

// The medoid, then up to count - 1 more rows chosen farthest-first (each the row farthest from
// those chosen, squared L2), stopping early when every row coincides with a chosen one. A search
// seeded with all of them starts near the query wherever it is: greedy search alone cannot cross
// between clusters that lie in unrelated directions (everything outside a cluster is then equally
// far), which a single entry point would need.
std::vector<int32_t> spread_entries(ThreadPool& pool, const float* vectors, int64_t n, int64_t dim, int64_t count);

// vectors: n x dim, finite, normalised for cosine, host memory; 0 <= n <= INT32_MAX.
BuiltGraph build_graph(Context& context, Metric metric, const float* vectors, int64_t n, int64_t dim,
                       const GraphBuildParams& params);

}  // namespace quiver
