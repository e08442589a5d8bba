// gpu_graph.h's GraphDevice: a fixed-degree graph, its vectors, ids and entry points in one device's
// memory, and the 16-bit copy of the vectors that half-precision walks read.
#pragma once

#include <cstdint>
#include <memory>

#include "cpp/core/metric.h"
#include "cuda/ivf/device_buffer.h"

namespace quiver::gpu {

class GraphDevice {
 public:
  GraphDevice(int device, int64_t dim, Metric metric) : device(device), dim(dim), metric(metric) {}

  int device;
  int64_t dim;
  Metric metric;
  int64_t rows = 0;
  int64_t degree = 0;
  DeviceBuffer<float> vectors;     // rows x dim; empty in a hashed graph
  DeviceBuffer<uint32_t> codes;    // a hashed graph's rows x dim code words (else empty)
  DeviceBuffer<int32_t> adjacency; // rows x degree, -1 for unused slots
  DeviceBuffer<int64_t> ids;       // rows, or empty: ids are row numbers
  DeviceBuffer<int32_t> entries;   // the rows every search starts from (without a layer)
  // gpu_graph.h's entry layer: a graph over sampled rows whose ids are their rows in this graph, the
  // width of its walk and the rows a query takes from it. Null: none.
  std::unique_ptr<GraphDevice> layer;
  int64_t layer_width = 0;
  int64_t layer_starts = 0;

  // rows x dim 16-bit values (float16, or bfloat16 when half_is_bf16), made by the first search that
  // walks in half precision, inside its Session (which serialises the calls on one Resources, so two
  // searches never make it at once), and dropped by an upload.
  mutable DeviceBuffer<uint16_t> half_vectors;
  mutable bool half_is_bf16 = false;
};

// The 16-bit copy of graph's vectors, made on the first call; call inside a Session of `resources`.
const uint16_t* graph_half_vectors(Resources& resources, const GraphDevice& graph, bool* is_bf16);

}  // namespace quiver::gpu
