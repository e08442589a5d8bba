#include "cpp/index/graph_gpu.h"

#include <algorithm>
#include <vector>

namespace quiver {

namespace {

// Cosine searches run as inner products over the normalised vectors.
Metric device_metric(Metric metric) { return metric == Metric::l2 ? Metric::l2 : Metric::inner_product; }

}  // namespace

GraphGpuCopy::GraphGpuCopy(gpu::Resources& resources, int64_t dim, Metric metric)
    : resources_(resources), graph_(gpu::make_graph(resources, dim, device_metric(metric))) {}

void GraphGpuCopy::upload(const GraphData& data) {
  if (data.graph == nullptr || data.graph->rows == 0) return;
  gpu::graph_upload(resources_, *graph_, data.graph->rows, data.vectors, data.graph->degree,
                    data.graph->adjacency.data(), data.ids, data.entries, data.n_entries);
}

int64_t GraphGpuCopy::device_bytes() const { return gpu::graph_device_bytes(*graph_); }

void GraphGpuCopy::search(ThreadPool& pool, const GraphData& data, ScratchPool& scratch, const float* queries,
                          int64_t nq, int64_t k, int64_t width, ComputeMode mode, const IdFilter& filter,
                          float* distances, int64_t* ids) const {
  const int64_t rows = data.graph->rows;
  // Rows that may be returned: allowed ids, no tombstones. Built only when something is excluded.
  std::vector<uint8_t> row_bits;
  gpu::GraphSearchOptions options;
  if (filter.bits != nullptr || data.removed != nullptr) {
    row_bits.assign(static_cast<size_t>((rows + 7) / 8), 0);
    for (int64_t r = 0; r < rows; ++r)
      if ((data.removed == nullptr || data.removed[r] == 0) && filter.allows(data.ids[r]))
        row_bits[r >> 3] |= uint8_t(1u << (r & 7));
    options.filter = gpu::RowFilter{row_bits.data(), rows};
  }
  options.search_width = width;  // the index checked k <= width <= gpu::kMaxSearchWidth
  options.half_walk = mode == ComputeMode::fp16 || mode == ComputeMode::bf16;
  gpu::graph_search(resources_, *graph_, nq, queries, k, options, distances, ids);

  // Queries whose walk reached fewer than k allowed rows: the CPU search with its exact fallback.
  std::vector<int64_t> short_queries;
  for (int64_t q = 0; q < nq; ++q)
    if (ids[q * k + k - 1] < 0) short_queries.push_back(q);
  if (short_queries.empty()) return;
  const int64_t dim = data.dim, m = int64_t(short_queries.size());
  std::vector<float> x(static_cast<size_t>(m * dim)), d(static_cast<size_t>(m * k));
  std::vector<int64_t> found(static_cast<size_t>(m * k));
  for (int64_t i = 0; i < m; ++i) std::copy_n(queries + short_queries[i] * dim, dim, &x[i * dim]);
  graph_knn_search(pool, data, scratch, x.data(), m, k, width, filter, d.data(), found.data());
  for (int64_t i = 0; i < m; ++i) {
    std::copy_n(&d[i * k], k, distances + short_queries[i] * k);
    std::copy_n(&found[i * k], k, ids + short_queries[i] * k);
  }
}

}  // namespace quiver
