#include "cpp/index/graph_gpu.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpp/backend/gpu_range.h"
#include "cpp/core/thread_pool.h"
#include "cpp/graph/entry_layer.h"
#include "cpp/graph/graph_distance.h"

namespace quiver {

namespace {

// Cosine searches run as inner products over the normalised vectors.
Metric device_metric(Metric metric) { return metric == Metric::l2 ? Metric::l2 : Metric::inner_product; }

// The hash directions: fixed, so that a reloaded index walks the same codes.
constexpr uint64_t kHashSeed = 0x5049a7e5u;

static_assert(kMaxGraphProbes == gpu::kMaxProbes, "the engine's probe limit is the backend's");

// The backend's options for a walk of `width`: the caller's, where not left to the backend (0).
gpu::GraphSearchOptions walk_options(const GraphWalkOptions& walk, int64_t width) {
  gpu::GraphSearchOptions options;
  options.search_width = width;
  if (walk.probes > 0) options.probes = walk.probes;
  options.warps_per_query = walk.warps_per_query;
  if (walk.queries_per_warp > 0) options.queries_per_warp = walk.queries_per_warp;
  switch (walk.visited) {
    case GraphVisited::automatic:
      break;
    case GraphVisited::hash_table:
      options.visited = gpu::VisitedSet::hash_table;
      break;
    case GraphVisited::bloom:
      options.visited = gpu::VisitedSet::bloom;
      break;
    case GraphVisited::cuckoo:
      options.visited = gpu::VisitedSet::cuckoo;
      break;
  }
  return options;
}

// Rows that may be returned: allowed ids, no tombstones, as bits in `bits`; an empty filter when
// nothing is excluded.
gpu::RowFilter allowed_rows(const GraphData& data, const IdFilter& filter, std::vector<uint8_t>& bits) {
  if (filter.bits == nullptr && data.removed == nullptr) return gpu::RowFilter{};
  const int64_t rows = data.graph->rows;
  bits.assign(static_cast<size_t>((rows + 7) / 8), 0);
  for (int64_t r = 0; r < rows; ++r)
    if ((data.removed == nullptr || data.removed[r] == 0) && filter.allows(data.ids[r]))
      bits[r >> 3] |= uint8_t(1u << (r & 7));
  return gpu::RowFilter{bits.data(), rows};
}

}  // namespace

GraphGpuCopy::GraphGpuCopy(gpu::Resources& resources, int64_t dim, Metric metric, int64_t hash_bits)
    : resources_(resources),
      hash_bits_(hash_bits),
      graph_(gpu::make_graph(resources, hash_bits > 0 ? hash_bits / 32 : dim, device_metric(metric))) {}

void GraphGpuCopy::upload(ThreadPool& pool, const GraphData& data) {
  if (data.graph == nullptr || data.graph->rows == 0) return;
  const int64_t n = data.graph->rows;
  if (hash_bits_ == 0) {
    gpu::graph_upload(resources_, *graph_, n, data.vectors, data.graph->degree, data.graph->adjacency.data(),
                      data.ids, data.entries, data.n_entries);
    if (data.layer != nullptr) gpu::graph_upload_layer(resources_, *graph_, device_layer(*data.layer));
    return;
  }
  HashProjection projection = make_hash_projection(data.vectors, n, data.dim, hash_bits_, kHashSeed);
  std::vector<uint32_t> codes(static_cast<size_t>(n * projection.words()));
  hash_codes(pool, projection, data.vectors, n, codes.data());
  gpu::graph_upload_codes(resources_, *graph_, n, codes.data(), data.graph->degree, data.graph->adjacency.data(),
                          data.entries, data.n_entries);
  // The walks start from the layer's rows nearest by Hamming distance: from the fixed entries, a
  // walk by Hamming distance rarely finds the query's cluster (synthetic 1M x 128, 256 bits:
  // recall@10 0.12 at width 48).
  if (data.layer != nullptr && !data.layer->empty()) {
    std::vector<uint32_t> layer_codes(data.layer->rows.size() * static_cast<size_t>(projection.words()));
    hash_codes(pool, projection, data.layer->vectors.data(), static_cast<int64_t>(data.layer->rows.size()),
               layer_codes.data());
    gpu::GraphLayer layer = device_layer(*data.layer);
    layer.vectors = nullptr;
    layer.codes = layer_codes.data();
    gpu::graph_upload_layer(resources_, *graph_, layer);
  }
  projection_ = std::move(projection);
}

void GraphGpuCopy::search_hashed(ThreadPool& pool, const GraphData& data, const float* queries, int64_t nq,
                                 int64_t k, int64_t width, const GraphWalkOptions& walk, const IdFilter& filter,
                                 float* distances, int64_t* ids) const {
  std::vector<uint32_t> codes(static_cast<size_t>(nq * projection_.words()));
  hash_codes(pool, projection_, queries, nq, codes.data());
  std::vector<int64_t> rows(static_cast<size_t>(nq * width));
  const gpu::GraphSearchOptions options = walk_options(walk, width);
  gpu::graph_search_codes(resources_, *graph_, nq, codes.data(), options, rows.data());
  const KeyFn key = search_key(data.metric);
  pool.parallel_for(nq, [&](int64_t q) {
    std::vector<Neighbour> found;
    const float* query = queries + q * data.dim;
    for (int64_t j = 0; j < width; ++j) {
      const int64_t r = rows[q * width + j];
      if (r < 0 || (data.removed != nullptr && data.removed[r] != 0) || !filter.allows(data.ids[r])) continue;
      found.push_back({key(query, data.vectors + r * data.dim, data.dim), static_cast<int32_t>(r)});
    }
    const size_t keep = std::min(found.size(), static_cast<size_t>(k));
    std::partial_sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(keep), found.end());
    for (int64_t j = 0; j < k; ++j) {
      const bool have = j < static_cast<int64_t>(keep);
      distances[q * k + j] = have ? key_to_distance(data.metric, found[j].key) : missing_distance(data.metric);
      ids[q * k + j] = have ? data.ids[found[j].row] : -1;
    }
  });
}

int64_t GraphGpuCopy::device_bytes() const { return gpu::graph_device_bytes(*graph_); }

void GraphGpuCopy::search(ThreadPool& pool, const GraphData& data, ScratchPool& scratch, const float* queries,
                          int64_t nq, int64_t k, int64_t width, ComputeMode mode, const GraphWalkOptions& walk,
                          const IdFilter& filter, float* distances, int64_t* ids) const {
  if (hash_bits_ > 0) {
    search_hashed(pool, data, queries, nq, k, width, walk, filter, distances, ids);
    complete_short_queries(pool, data, scratch, queries, nq, k, width, filter, distances, ids);
    return;
  }
  std::vector<uint8_t> row_bits;
  // The index checked k <= width <= gpu::kMaxSearchWidth.
  gpu::GraphSearchOptions options = walk_options(walk, width);
  options.filter = allowed_rows(data, filter, row_bits);
  options.half_walk = mode == ComputeMode::fp16 || mode == ComputeMode::bf16;
  gpu::graph_search(resources_, *graph_, nq, queries, k, options, distances, ids);
  complete_short_queries(pool, data, scratch, queries, nq, k, width, filter, distances, ids);
}

bool GraphGpuCopy::holds_vectors() const { return hash_bits_ == 0 && gpu::graph_vectors(*graph_) != nullptr; }

RangeResult GraphGpuCopy::range_search(const GraphData& data, const float* queries, int64_t nq, float radius,
                                       const IdFilter& filter, int64_t max_results) const {
  std::vector<uint8_t> row_bits;
  const gpu::RowFilter rows = allowed_rows(data, filter, row_bits);
  gpu::RangeHits hits = gpu::range_search(resources_, device_metric(data.metric), gpu::graph_vectors(*graph_), nullptr,
                                          data.graph->rows, data.dim, queries, nq, radius, rows, max_results);
  RangeResult result;
  result.lims = std::move(hits.lims);
  result.ids = std::move(hits.rows);
  result.distances = std::move(hits.distances);
  for (int64_t& id : result.ids) id = data.ids[id];
  return result;
}

void GraphGpuCopy::complete_short_queries(ThreadPool& pool, const GraphData& data, ScratchPool& scratch,
                                          const float* queries, int64_t nq, int64_t k, int64_t width,
                                          const IdFilter& filter, float* distances, int64_t* ids) const {
  // A walk over vectors takes device queries and outputs in place (GraphIndex::searches_device_memory):
  // the CPU reads and writes them through host copies.
  auto copy = [this](void* dst, const void* src, int64_t bytes, bool device) {
    if (device) {
      gpu::copy_memory(resources_, dst, src, bytes);
    } else {
      std::memcpy(dst, src, static_cast<size_t>(bytes));
    }
  };
  const int64_t dim = data.dim, result_bytes = k * int64_t(sizeof(int64_t));
  const bool device_ids = gpu::is_device_pointer(ids);
  std::vector<int64_t> found_ids;
  if (device_ids) {
    found_ids.resize(static_cast<size_t>(nq * k));
    copy(found_ids.data(), ids, nq * result_bytes, true);
  }
  const int64_t* found_by_walk = device_ids ? found_ids.data() : ids;
  std::vector<int64_t> short_queries;
  for (int64_t q = 0; q < nq; ++q)
    if (found_by_walk[q * k + k - 1] < 0) short_queries.push_back(q);
  if (short_queries.empty()) return;
  const int64_t m = int64_t(short_queries.size());
  std::vector<float> x(static_cast<size_t>(m * dim)), d(static_cast<size_t>(m * k));
  std::vector<int64_t> found(static_cast<size_t>(m * k));
  const bool device_queries = gpu::is_device_pointer(queries), device_distances = gpu::is_device_pointer(distances);
  for (int64_t i = 0; i < m; ++i)
    copy(&x[i * dim], queries + short_queries[i] * dim, dim * int64_t(sizeof(float)), device_queries);
  graph_knn_search(pool, data, scratch, x.data(), m, k, width, filter, d.data(), found.data());
  for (int64_t i = 0; i < m; ++i) {
    copy(distances + short_queries[i] * k, &d[i * k], k * int64_t(sizeof(float)), device_distances);
    copy(ids + short_queries[i] * k, &found[i * k], result_bytes, device_ids);
  }
}

}  // namespace quiver
