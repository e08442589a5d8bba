// The k-nearest-neighbour graph of a data set: for every point its k nearest other points (itself
// excluded, ties broken by the smaller id), closest first. The foundation of the graph index
// (cpp/index/graph_index.*) and of qv_knn_graph.
#pragma once

#include <cstdint>

#include "cpp/core/metric.h"
#include "cpp/core/progress.h"

namespace quiver {

class Context;

enum class KnnGraphMethod : int32_t {
  automatic = 0,   // exact for small sets (and for target_recall 1), approximate above
  exact = 1,       // tiled brute force (GPU on a CUDA context, else the CPU)
  approximate = 2, // candidate lists from an inverted file, refined by NN-descent until a control
                   // sample of exact neighbours shows target_recall (or the lists stop changing)
};

struct KnnGraphOptions {
  int64_t k = 32;
  KnnGraphMethod method = KnnGraphMethod::automatic;
  // Approximate method: the recall/speed knob, the recall@k aimed at (0 < target_recall <= 1).
  double target_recall = 0.95;
  uint64_t seed = 1234;
  // Points whose exact neighbours are computed to estimate the recall of an approximate graph;
  // 0: no estimate (KnnGraphStats::recall stays -1).
  int64_t recall_sample = 0;
  // May be empty (cpp/core/progress.h); cancelling throws Status::cancelled (QV_ERR_CANCELLED), the
  // outputs then partly written.
  ProgressFn progress;
};

struct KnnGraphStats {
  double recall = -1;  // estimated recall@k against exact neighbours; 1 for the exact method
  double seconds = 0;
  KnnGraphMethod method = KnnGraphMethod::exact;  // the method that ran (automatic resolved)
  int64_t iterations = 0;                         // NN-descent iterations run (approximate)
};

// x: n x dim floats (host or device memory of the context's device), finite; n >= 2,
// 1 <= k < n. Writes neighbours (n x k row numbers, int32) and, unless null, distances (n x k, in the
// metric's units). Throws invalid_argument for bad arguments.
//
// The exact method runs on the context's device; the approximate one on its CPU threads (its
// recall sample's exact neighbours on the device). Both are deterministic for a seed whatever the
// thread count. Outputs may be host or device memory.
KnnGraphStats knn_graph(Context& context, Metric metric, int64_t dim, int64_t n, const float* x,
                        const KnnGraphOptions& options, int32_t* neighbours, float* distances);

// As knn_graph, with 64-bit ids (the C API's).
KnnGraphStats knn_graph_ids64(Context& context, Metric metric, int64_t dim, int64_t n, const float* x,
                              const KnnGraphOptions& options, int64_t* ids, float* distances);

// The method `automatic` resolves to for these sizes on this context.
KnnGraphMethod resolve_knn_graph_method(const Context& context, KnnGraphMethod method, int64_t n, int64_t dim);

}  // namespace quiver
