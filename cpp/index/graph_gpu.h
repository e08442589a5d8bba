// The graph index's copy on a CUDA device, searched by SONG (cpp/backend/gpu_graph.h): the vectors,
// the adjacency and the ids, uploaded whole after each change of the host copy (build, add, remove,
// load), so the host stays the authority and the device copy never differs from it. In SONG's
// hashing mode (hash_bits > 0, graph/hash_codes.h) the device holds hash codes in place of the
// vectors and the walk's final candidates are re-ranked exactly on the host.
#pragma once

#include <cstdint>

#include "cpp/backend/gpu_graph.h"
#include "cpp/core/compute_mode.h"
#include "cpp/graph/hash_codes.h"
#include "cpp/index/graph_search.h"
#include "cpp/index/index.h"

namespace quiver {

class GraphGpuCopy {
 public:
  GraphGpuCopy(gpu::Resources& resources, int64_t dim, Metric metric, int64_t hash_bits);

  // Replaces the device copy with data's graph, vectors (or their codes) and ids (all or nothing).
  void upload(ThreadPool& pool, const GraphData& data);
  int64_t device_bytes() const;

  // Whether range_search runs on the device: the vectors are there (not in the hashing mode).
  bool holds_vectors() const;
  // The exact range search (graph_range_scan's contract: every allowed row within the radius) over
  // the device's vectors (cpp/backend/gpu_range.h): the distances are float32 in the GPU exact
  // search's order of summation. max_results as SearchOptions::max_range_results.
  RangeResult range_search(const GraphData& data, const float* queries, int64_t nq, float radius,
                           const IdFilter& filter, int64_t max_results) const;

  // graph_knn_search's contract, on the device (k <= width <= gpu::kMaxSearchWidth): queries
  // normalised for cosine, in host memory or (a copy holding vectors) device memory, as may be the
  // outputs; fp16 and bf16 modes walk the graph in half precision (the
  // results re-ranked in float32; a hashed copy ignores the mode); `walk` tunes the walk (hashed or
  // not), and combinations the device cannot run throw invalid_argument;
  // filter and tombstones become a row filter; queries left short of k results by them are
  // completed on the CPU (graph_knn_search's exact fallback) through `pool` and `scratch`.
  void search(ThreadPool& pool, const GraphData& data, ScratchPool& scratch, const float* queries, int64_t nq,
              int64_t k, int64_t width, ComputeMode mode, const GraphWalkOptions& walk, const IdFilter& filter,
              float* distances, int64_t* ids) const;

 private:
  // The hashed walk: each query's width rows nearest by Hamming distance, re-ranked on the host;
  // queries with fewer than k allowed rows among them are left with id -1 at position k - 1.
  void search_hashed(ThreadPool& pool, const GraphData& data, const float* queries, int64_t nq, int64_t k,
                     int64_t width, const GraphWalkOptions& walk, const IdFilter& filter, float* distances,
                     int64_t* ids) const;

  // Queries whose walk reached fewer than k allowed rows (id -1 at k - 1): the CPU search with its
  // exact fallback. Queries and outputs may be device memory.
  void complete_short_queries(ThreadPool& pool, const GraphData& data, ScratchPool& scratch, const float* queries,
                              int64_t nq, int64_t k, int64_t width, const IdFilter& filter, float* distances,
                              int64_t* ids) const;

  gpu::Resources& resources_;
  int64_t hash_bits_;
  HashProjection projection_;  // of the uploaded vectors, when hashing
  gpu::GraphDevicePtr graph_;
};

}  // namespace quiver
