// gpu_graph.h's storage calls: create, upload (all or nothing), free; and the 16-bit copy.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

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

namespace {

constexpr float kHalfMax = 65504.0f;

__global__ void flag_beyond_half_range(const float* x, int64_t count, int* beyond) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    if (!(fabsf(x[i]) <= kHalfMax)) *beyond = 1;  // every writer writes 1
}

template <bool kBf16>
__global__ void to_16bit(const float* x, int64_t count, uint16_t* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = kBf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(x[i])) : __half_as_ushort(__float2half_rn(x[i]));
}

}  // namespace

const uint16_t* graph_half_vectors(Resources& resources, const GraphDevice& graph, bool* is_bf16) {
  const int64_t count = graph.rows * graph.dim;
  if (graph.half_vectors.size() != count) {
    cudaStream_t stream = resources.stream(0);
    const unsigned blocks = unsigned(std::min<int64_t>((count + 255) / 256, 4096));
    PoolBuffer<int> beyond_dev(resources.pool(), 1);
    QV_CUDA_CHECK(cudaMemsetAsync(beyond_dev.get(), 0, sizeof(int), stream));
    flag_beyond_half_range<<<blocks, 256, 0, stream>>>(graph.vectors.get(), count, beyond_dev.get());
    QV_LAUNCH_CHECK("flag_beyond_half_range");
    int beyond = 0;
    copy_from_device(resources.staging(), graph.device, &beyond, beyond_dev.get(), sizeof(int), stream);
    DeviceBuffer<uint16_t> half(resources.pool(), count);
    if (beyond) to_16bit<true><<<blocks, 256, 0, stream>>>(graph.vectors.get(), count, half.get());
    else to_16bit<false><<<blocks, 256, 0, stream>>>(graph.vectors.get(), count, half.get());
    QV_LAUNCH_CHECK("to_16bit");  // ordered before the searches on the same stream
    graph.half_vectors = std::move(half);
    graph.half_is_bf16 = beyond != 0;
  }
  *is_bf16 = graph.half_is_bf16;
  return graph.half_vectors.get();
}

namespace {

// graph_upload and graph_upload_codes: rows of dim 4-byte words (floats or codes) into `Data`.
template <typename Data>
void upload(Resources& resources, GraphDevice& graph, int64_t n, const Data* x, int64_t degree,
            const int32_t* adjacency, const int64_t* ids, const int32_t* entries, int64_t entry_count) {
  DeviceScope device_scope(resources.device());
  require(graph.device == resources.device(), "the graph lives on device ", graph.device, ", the resources on ",
          resources.device());
  require(n >= 1 && n <= INT32_MAX, "n = ", n, " is outside 1 .. ", INT32_MAX);
  require(degree >= 1 && degree <= kMaxGraphDegree, "degree = ", degree, " is outside 1 .. ", kMaxGraphDegree);
  require(x != nullptr && adjacency != nullptr, "x and adjacency must not be null");
  for (int64_t i = 0; i < n * degree; ++i)
    require(adjacency[i] < n, "adjacency[", i, "] = ", adjacency[i], " is not a row (n = ", n, ")");
  require(entries != nullptr && entry_count >= 1, "at least one entry point is needed");
  for (int64_t i = 0; i < entry_count; ++i)
    require(entries[i] >= 0 && entries[i] < n, "entries[", i, "] = ", entries[i], " is not a row (n = ", n, ")");
  Session session(resources);
  cudaStream_t stream = resources.stream(0);
  DeviceBuffer<Data> rows_data(resources.pool(), n * graph.dim);
  DeviceBuffer<int32_t> rows(resources.pool(), n * degree);
  DeviceBuffer<int64_t> row_ids;
  if (ids != nullptr) row_ids = DeviceBuffer<int64_t>(resources.pool(), n);
  DeviceBuffer<int32_t> entry_rows(resources.pool(), entry_count);
  copy_to_device(resources.staging(), graph.device, rows_data.get(), x, size_t(n * graph.dim) * sizeof(Data), stream);
  copy_to_device(resources.staging(), graph.device, rows.get(), adjacency, size_t(n * degree) * sizeof(int32_t),
                 stream);
  if (ids != nullptr)
    copy_to_device(resources.staging(), graph.device, row_ids.get(), ids, size_t(n) * sizeof(int64_t), stream);
  copy_to_device(resources.staging(), graph.device, entry_rows.get(), entries, size_t(entry_count) * sizeof(int32_t),
                 stream);
  session.finish();
  if constexpr (std::is_same_v<Data, float>) {
    graph.vectors = std::move(rows_data);
    graph.codes.reset();
  } else {
    graph.codes = std::move(rows_data);
    graph.vectors.reset();
  }
  graph.adjacency = std::move(rows);
  graph.ids = std::move(row_ids);
  graph.entries = std::move(entry_rows);
  graph.half_vectors.reset();
  graph.layer.reset();
  graph.rows = n;
  graph.degree = degree;
}

}  // namespace

void graph_upload(Resources& resources, GraphDevice& graph, int64_t n, const float* x, int64_t degree,
                  const int32_t* adjacency, const int64_t* ids, const int32_t* entries, int64_t entry_count) {
  upload(resources, graph, n, x, degree, adjacency, ids, entries, entry_count);
}

void graph_upload_codes(Resources& resources, GraphDevice& graph, int64_t n, const uint32_t* codes, int64_t degree,
                        const int32_t* adjacency, const int32_t* entries, int64_t entry_count) {
  upload(resources, graph, n, codes, degree, adjacency, nullptr, entries, entry_count);
}

void graph_upload_layer(Resources& resources, GraphDevice& graph, const GraphLayer& layer) {
  if (layer.rows == 0) {
    graph.layer.reset();
    return;
  }
  require(layer.rows <= graph.rows, "the layer's ", layer.rows, " rows are more than the graph's ", graph.rows);
  require(layer.graph_rows != nullptr, "graph_rows must not be null");
  const bool hashed = graph.codes.size() > 0;
  require(hashed ? layer.codes != nullptr : layer.vectors != nullptr,
          hashed ? "a hashed graph's layer needs codes" : "the layer needs vectors");
  require(layer.width >= 1 && layer.width <= kMaxSearchWidth, "layer width = ", layer.width, " is outside 1 .. ",
          kMaxSearchWidth);
  require(layer.starts >= 1 && layer.starts <= layer.width, "layer starts = ", layer.starts, " is outside 1 .. ",
          layer.width);
  std::vector<int64_t> rows(static_cast<size_t>(layer.rows));
  for (int64_t i = 0; i < layer.rows; ++i) {
    require(layer.graph_rows[i] >= 0 && layer.graph_rows[i] < graph.rows, "graph_rows[", i, "] = ",
            layer.graph_rows[i], " is not a row (n = ", graph.rows, ")");
    rows[i] = layer.graph_rows[i];
  }
  auto uploaded = std::make_unique<GraphDevice>(graph.device, graph.dim, graph.metric);
  if (hashed)
    upload(resources, *uploaded, layer.rows, layer.codes, layer.degree, layer.adjacency, rows.data(), layer.entries,
           layer.entry_count);
  else
    upload(resources, *uploaded, layer.rows, layer.vectors, layer.degree, layer.adjacency, rows.data(), layer.entries,
           layer.entry_count);
  graph.layer = std::move(uploaded);
  graph.layer_width = layer.width;
  graph.layer_starts = layer.starts;
}

int64_t graph_rows(const GraphDevice& graph) { return graph.rows; }

const float* graph_vectors(const GraphDevice& graph) { return graph.rows > 0 ? graph.vectors.get() : nullptr; }

int64_t graph_device_bytes(const GraphDevice& graph) {
  return graph.vectors.bytes() + graph.codes.bytes() + graph.adjacency.bytes() + graph.ids.bytes() +
         graph.entries.bytes() + graph.half_vectors.bytes() + (graph.layer ? graph_device_bytes(*graph.layer) : 0);
}

}  // namespace quiver::gpu
