#include "cpp/graph/entry_layer.h"

#include <algorithm>

#include "cpp/graph/graph_build.h"
#include "cpp/graph/knn_graph.h"

namespace quiver {

EntryLayer build_entry_layer(Context& context, Metric metric, const float* vectors, int64_t n, int64_t dim,
                             const int32_t* entries, int64_t n_entries) {
  const int64_t size = kEntryLayerRows;
  EntryLayer layer;
  if (n < 4 * size) return layer;
  std::vector<uint8_t> taken(static_cast<size_t>(n), 0);
  for (int64_t e = 0; e < n_entries; ++e) {
    if (entries[e] < 0 || entries[e] >= n || taken[entries[e]]) continue;
    taken[entries[e]] = 1;
    layer.rows.push_back(entries[e]);
  }
  const int64_t step = n / size;
  for (int64_t r = 0; r < n && static_cast<int64_t>(layer.rows.size()) < size; r += step)
    if (!taken[r]) layer.rows.push_back(static_cast<int32_t>(r));
  const int64_t s = static_cast<int64_t>(layer.rows.size());
  layer.vectors.resize(static_cast<size_t>(s * dim));
  for (int64_t i = 0; i < s; ++i)
    std::copy_n(vectors + int64_t(layer.rows[i]) * dim, dim, layer.vectors.data() + i * dim);
  // Linked as a small graph of its own (build_graph: the sample's exact neighbours pruned, then
  // pruned again from searches that start at its spread entries, as NSG), whose walks start at those
  // entries. The second pass gives each sample row edges toward where walks from the entries arrive,
  // so walks cross between clusters: pruned from the exact neighbours alone, clusters that no entry
  // fell in could be unreachable (22 000 vectors in 100 well-separated clusters: 6 of 500 queries
  // found none of their neighbours at width 80, and none with this graph).
  GraphBuildParams params;
  params.prune.degree = kEntryLayerDegree;
  params.knn_k = kEntryLayerCandidates;
  params.knn_method = KnnGraphMethod::exact;
  BuiltGraph built = build_graph(context, metric, layer.vectors.data(), s, dim, params);
  layer.graph = std::move(built.graph);
  layer.starts = std::move(built.entries);
  return layer;
}

void entry_rows(const EntryLayer& layer, int64_t dim, KeyFn key, const float* query, BeamScratch& scratch,
                std::vector<Neighbour>& found, std::vector<int32_t>& out) {
  GraphView view;
  view.graph = &layer.graph;
  view.vectors = layer.vectors.data();
  view.dim = dim;
  view.key = key;
  beam_search(view, query, layer.starts.data(), static_cast<int64_t>(layer.starts.size()), kEntryLayerWidth,
              kEntryLayerStarts, nullptr, scratch, found);
  out.clear();
  for (const Neighbour& c : found) out.push_back(layer.rows[c.row]);
}

WalkStarts walk_starts(const EntryLayer* layer, const int32_t* entries, int64_t n_entries, int64_t dim, KeyFn key,
                       const float* query, BeamScratch& scratch, std::vector<Neighbour>& found,
                       std::vector<int32_t>& buffer) {
  if (layer == nullptr) return {entries, n_entries};
  entry_rows(*layer, dim, key, query, scratch, found, buffer);
  return {buffer.data(), static_cast<int64_t>(buffer.size())};
}

int64_t entry_layer_bytes(const EntryLayer& layer) {
  return static_cast<int64_t>(layer.rows.capacity() * sizeof(int32_t) + layer.vectors.capacity() * sizeof(float) +
                              layer.graph.adjacency.capacity() * sizeof(int32_t) +
                              layer.starts.capacity() * sizeof(int32_t));
}

gpu::GraphLayer device_layer(const EntryLayer& layer) {
  gpu::GraphLayer d;
  d.rows = static_cast<int64_t>(layer.rows.size());
  d.vectors = layer.vectors.data();
  d.degree = layer.graph.degree;
  d.adjacency = layer.graph.adjacency.data();
  d.graph_rows = layer.rows.data();
  d.entries = layer.starts.data();
  d.entry_count = static_cast<int64_t>(layer.starts.size());
  d.width = kDeviceLayerWidth;
  d.starts = kEntryLayerStarts;
  return d;
}

}  // namespace quiver
