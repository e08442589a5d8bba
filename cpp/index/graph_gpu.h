// The graph index's copy on a CUDA device, searched by SONG (cpp/backend/gpu_graph.h): the vectors,
// the adjacency and the ids, uploaded whole after each change of the host copy (build, add, remove,
// load), so the host stays the authority and the device copy never differs from it.
#pragma once

#include <cstdint>

#include "cpp/backend/gpu_graph.h"
#include "cpp/core/compute_mode.h"
#include "cpp/index/graph_search.h"

namespace quiver {

class GraphGpuCopy {
 public:
  GraphGpuCopy(gpu::Resources& resources, int64_t dim, Metric metric);

  // Replaces the device copy with data's graph, vectors and ids (all or nothing).
  void upload(const GraphData& data);
  int64_t device_bytes() const;

  // graph_knn_search's contract, on the device (k <= width <= gpu::kMaxSearchWidth): queries in host
  // memory (normalised for cosine); fp16 and bf16 modes walk the graph in half precision (the
  // results re-ranked in float32);
  // filter and tombstones become a row filter; queries left short of k results by them are
  // completed on the CPU (graph_knn_search's exact fallback) through `pool` and `scratch`.
  void search(ThreadPool& pool, const GraphData& data, ScratchPool& scratch, const float* queries, int64_t nq,
              int64_t k, int64_t width, ComputeMode mode, const IdFilter& filter, float* distances,
              int64_t* ids) const;

 private:
  gpu::Resources& resources_;
  gpu::GraphDevicePtr graph_;
};

}  // namespace quiver
