#include "cpp/graph/device_refine.h"

#include <algorithm>

#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/graph/graph_build.h"

namespace quiver {

DeviceRefineSearch::DeviceRefineSearch(Context& context, Metric metric, const float* vectors, int64_t n, int64_t dim,
                                       const FixedDegreeGraph& graph, const std::vector<int32_t>& entries,
                                       const EntryLayer& layer, int64_t count)
    : context_(context), metric_(metric), vectors_(vectors), dim_(dim), count_(count) {
  require(count >= 1 && count <= gpu::kMaxSearchWidth, "refine candidates = ", count, " is outside 1 .. ",
          gpu::kMaxSearchWidth);
  // Cosine: the vectors are normalised, their inner products rank as the cosine.
  graph_ = gpu::make_graph(context.gpu(), dim, metric == Metric::l2 ? Metric::l2 : Metric::inner_product);
  gpu::graph_upload(context.gpu(), *graph_, n, vectors, graph.degree, graph.adjacency.data(), nullptr,
                    entries.data(), static_cast<int64_t>(entries.size()));
  if (!layer.empty()) gpu::graph_upload_layer(context.gpu(), *graph_, device_layer(layer));
}

DeviceRefineSearch::Chunk DeviceRefineSearch::search(int64_t first, int64_t last) const {
  const int64_t nq = last - first;
  require(nq >= 0 && nq <= kDeviceRefineChunk, "a refine chunk of ", nq, " points");
  Chunk chunk;
  chunk.first = first;
  chunk.rows.resize(static_cast<size_t>(nq * count_));
  chunk.values.resize(static_cast<size_t>(nq * count_));
  gpu::GraphSearchOptions options;
  options.search_width = count_;
  gpu::graph_search(context_.gpu(), *graph_, nq, vectors_ + first * dim_, count_, options, chunk.values.data(),
                    chunk.rows.data());
  return chunk;
}

void DeviceRefineSearch::candidates(const Chunk& chunk, int64_t p, std::vector<Neighbour>& list) const {
  const int64_t at = (p - chunk.first) * count_;
  for (int64_t j = 0; j < count_; ++j) {
    const int64_t row = chunk.rows[static_cast<size_t>(at + j)];
    if (row < 0) break;  // the rest are padding too
    const float value = chunk.values[static_cast<size_t>(at + j)];
    // The device reports squared L2, or the product itself (largest first); search keys are
    // smaller-is-closer, as the prune keys made from them.
    const float search_key = metric_ == Metric::l2 ? value : -value;
    list.push_back({prune_key_of_search_key(metric_, search_key), static_cast<int32_t>(row)});
  }
}

}  // namespace quiver
