// A one-level entry layer for the CPU walk of a large graph (HNSW's upper layers, reduced to one): a
// small pruned graph over a sample of the rows, searched first, so that the walk over the whole graph
// starts near the query instead of at the index's fixed entry points, which are spread over the data
// and cost the walk expansions far from the query before it narrows down.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/backend/gpu_graph.h"
#include "cpp/core/metric.h"
#include "cpp/graph/beam_search.h"

namespace quiver {

class Context;

// The layer's shape and its search, measured on synthetic 1M x 128 (1 024 clusters; a Graph32
// index, 2 threads): at every search width 12 .. 48 the walk from the layer's 2 best rows reached a
// higher recall@10 at a higher QPS than from the index's 32 fixed entry points (width 16: 0.948
// against 0.925, 25 800 against 22 400 QPS). The layer's links pruned from 48 exact neighbours, not
// its 12 nearest plus 4 spread rows, cut the queries whose walk ended in another cluster (no true
// neighbour found) from 71 to 20 in 10 000 at width 48: recall 0.9896 -> 0.9946, 0.9436 -> 0.9592
// at 16, at the same QPS. Larger layers (16 384, 65 536 rows) of the old links lost more queries; 1
// best row to start from did as well as 2, 8 or 32.
constexpr int64_t kEntryLayerRows = 4096;
constexpr int32_t kEntryLayerDegree = 16;
constexpr int64_t kEntryLayerCandidates = 48;  // the k of the layer graph's k-NN graph (exact)
constexpr int64_t kEntryLayerWidth = 32;
constexpr int64_t kEntryLayerStarts = 2;

struct EntryLayer {
  std::vector<int32_t> rows;   // sample index -> row of the whole graph
  std::vector<float> vectors;  // rows.size() x dim, the sample's vectors side by side
  FixedDegreeGraph graph;      // over sample indices
  std::vector<int32_t> starts;  // sample indices the layer's walks start from: its graph's entries
  bool empty() const { return rows.empty(); }
};

// The layer over n rows (vectors n x dim, finite): the index's entries first, then rows evenly
// spaced, kEntryLayerRows in all, linked by build_graph as a graph of their own (degree
// kEntryLayerDegree, from the exact k-NN graph of the sample, on the context's device), with that
// graph's entries as the starts. Empty when n is below 4 x kEntryLayerRows: walks that short gain
// little from it.
EntryLayer build_entry_layer(Context& context, Metric metric, const float* vectors, int64_t n, int64_t dim,
                             const int32_t* entries, int64_t n_entries);

// Where the walk of `query` starts: the rows of the best kEntryLayerStarts sample rows found by a
// search of the layer with a pool of kEntryLayerWidth (scratch and found: the caller's, reused).
void entry_rows(const EntryLayer& layer, int64_t dim, KeyFn key, const float* query, BeamScratch& scratch,
                std::vector<Neighbour>& found, std::vector<int32_t>& out);

// The rows a walk for `query` starts from: the layer's (entry_rows, written to `buffer`) when `layer`
// is not null, else the n_entries `entries`. A layer's search uses `scratch` and `found` first, so
// the walk after it must start a new search in them (beam_search does).
struct WalkStarts {
  const int32_t* rows;
  int64_t count;
};
WalkStarts walk_starts(const EntryLayer* layer, const int32_t* entries, int64_t n_entries, int64_t dim, KeyFn key,
                       const float* query, BeamScratch& scratch, std::vector<Neighbour>& found,
                       std::vector<int32_t>& buffer);

// Host bytes the layer holds.
int64_t entry_layer_bytes(const EntryLayer& layer);

// The device's walk of the layer (gpu::graph_upload_layer): a queue of 8, not the CPU walk's 32.
// The layer walk is a chain of expansions of its own before the walk over the graph, and on the
// GPU its length costs more than the starts it finds save. H200, 10 000 queries host to host,
// Graph32 (QPS at recall@10 0.95; batch-1 ms), layer widths 8 / 16 / 32: Fashion-MNIST 1.83M /
// 1.6M / 1.65M, 0.157 / 0.180 / 0.235 ms; synthetic 1M x 128 5.38M / 5.2M / 5.3M, 0.164 / 0.195 /
// 0.196 ms.
constexpr int64_t kDeviceLayerWidth = 8;

// The layer as the device walks it: from its start rows, for as many rows as the CPU walk takes
// from it. Points into `layer`.
gpu::GraphLayer device_layer(const EntryLayer& layer);

}  // namespace quiver
