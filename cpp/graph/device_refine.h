// The graph build's refine (graph_build.cpp, step 2) with its searches on the device: SONG walks
// over graph 1 (cpp/backend/gpu_graph.h), every point a query, in chunks of points, each walk
// starting from the entry layer's copy as a query's does. A point's candidates are the rows its walk
// kept, the `count` closest it computed with a queue of `count`, where the CPU's walk of the
// refine width keeps every row it computed and takes the closest `count`.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/backend/gpu_graph.h"
#include "cpp/core/metric.h"
#include "cpp/graph/beam_search.h"
#include "cpp/graph/entry_layer.h"
#include "cpp/graph/fixed_degree_graph.h"

namespace quiver {

class Context;

// Points searched at once: host buffers of count x 12 bytes a point (64 MiB at count 128).
constexpr int64_t kDeviceRefineChunk = 65536;

class DeviceRefineSearch {
 public:
  // Uploads graph (over n x dim vectors, host memory, normalised for cosine), its entries and layer
  // (may be empty) to the context's device. Throws out_of_device_memory where they do not fit.
  DeviceRefineSearch(Context& context, Metric metric, const float* vectors, int64_t n, int64_t dim,
                     const FixedDegreeGraph& graph, const std::vector<int32_t>& entries, const EntryLayer& layer,
                     int64_t count);

  // What the walks of a chunk of points found.
  struct Chunk {
    int64_t first = 0;
    std::vector<int64_t> rows;  // points x count, -1 past the rows a walk reached
    std::vector<float> values;  // the device's distances: squared L2, or inner products
  };

  // Walks for points first .. last - 1 (at most kDeviceRefineChunk of them). One call at a time;
  // the host may meanwhile prune an earlier chunk.
  Chunk search(int64_t first, int64_t last) const;
  // Appends point p's candidates (p in `chunk`) to list, with prune keys.
  void candidates(const Chunk& chunk, int64_t p, std::vector<Neighbour>& list) const;

 private:
  Context& context_;
  Metric metric_;
  const float* vectors_;
  int64_t dim_;
  int64_t count_;
  gpu::GraphDevicePtr graph_;
};

}  // namespace quiver
