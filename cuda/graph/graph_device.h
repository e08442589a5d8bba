// gpu_graph.h's GraphDevice: a fixed-degree graph, its vectors and ids in one device's memory.
#pragma once

#include <cstdint>

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
  DeviceBuffer<float> vectors;     // rows x dim
  DeviceBuffer<int32_t> adjacency; // rows x degree, -1 for unused slots
  DeviceBuffer<int64_t> ids;       // rows, or empty: ids are row numbers
};

}  // namespace quiver::gpu
