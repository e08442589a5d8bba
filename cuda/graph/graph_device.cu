// gpu_graph.h's storage calls: create, upload (all or nothing), free.
#include <cstdint>

#include "cpp/backend/gpu_graph.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/graph/graph_device.h"

namespace quiver::gpu {

GraphDevice* graph_create(Resources& resources, int64_t dim, Metric metric) {
  require(dim >= 1, "dim = ", dim, " is not positive");
  require(metric == Metric::l2 || metric == Metric::inner_product,
          "the GPU graph search takes L2 or inner product (cosine: normalised vectors, inner product)");
  return new GraphDevice(resources.device(), dim, metric);
}

void graph_free(GraphDevice* graph) noexcept {
  if (graph == nullptr) return;
  DeviceScopeNoThrow scope(graph->device);
  delete graph;
}

void graph_upload(Resources& resources, GraphDevice& graph, int64_t n, const float* x, int64_t degree,
                  const int32_t* adjacency, const int64_t* ids) {
  DeviceScope device_scope(resources.device());
  require(graph.device == resources.device(), "the graph lives on device ", graph.device, ", the resources on ",
          resources.device());
  require(n >= 1 && n <= INT32_MAX, "n = ", n, " is outside 1 .. ", INT32_MAX);
  require(degree >= 1 && degree <= kMaxGraphDegree, "degree = ", degree, " is outside 1 .. ", kMaxGraphDegree);
  require(x != nullptr && adjacency != nullptr, "x and adjacency must not be null");
  for (int64_t i = 0; i < n * degree; ++i)
    require(adjacency[i] < n, "adjacency[", i, "] = ", adjacency[i], " is not a row (n = ", n, ")");
  Session session(resources);
  cudaStream_t stream = resources.stream(0);
  DeviceBuffer<float> vectors(resources.pool(), n * graph.dim);
  DeviceBuffer<int32_t> rows(resources.pool(), n * degree);
  DeviceBuffer<int64_t> row_ids;
  if (ids != nullptr) row_ids = DeviceBuffer<int64_t>(resources.pool(), n);
  copy_to_device(resources.staging(), graph.device, vectors.get(), x, size_t(n * graph.dim) * sizeof(float), stream);
  copy_to_device(resources.staging(), graph.device, rows.get(), adjacency, size_t(n * degree) * sizeof(int32_t),
                 stream);
  if (ids != nullptr)
    copy_to_device(resources.staging(), graph.device, row_ids.get(), ids, size_t(n) * sizeof(int64_t), stream);
  session.finish();
  graph.vectors = std::move(vectors);
  graph.adjacency = std::move(rows);
  graph.ids = std::move(row_ids);
  graph.rows = n;
  graph.degree = degree;
}

int64_t graph_rows(const GraphDevice& graph) { return graph.rows; }

int64_t graph_device_bytes(const GraphDevice& graph) {
  return graph.vectors.bytes() + graph.adjacency.bytes() + graph.ids.bytes();
}

}  // namespace quiver::gpu
