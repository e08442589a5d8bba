// What the engine knows of the GPU graph search (SONG, cuda/graph/): a fixed-degree graph and its
// vectors copied to one device, searched by one warp per query. The graph index (cpp/index/graph*)
// keeps the authoritative copy on the host and uploads it after a build, an add or a load.
//
// The search follows SONG (Zhao, Tan, Li, ICDE 2020), decoupled per iteration into candidate
// locating (the best unexpanded entries of the queue, their neighbour rows), bulk distance
// computation (lane teams per candidate, shuffle reductions) and data-structure maintenance (a
// sorted bounded queue of search_width entries that is both SONG's q and its top-k; a visited set
// in shared memory (a hash table, or a Bloom or Cuckoo filter: VisitedSet) with selected insertion and
// visited deletion, so it holds about the queue's nodes and stays within 4 x search_width words
// whatever the graph's size).
//
// Errors as in gpu.h. Every call blocks until its outputs are written and keeps no caller pointer.
#pragma once

#include <cstdint>
#include <memory>

#include "cpp/backend/gpu.h"
#include "cpp/core/metric.h"

namespace quiver::gpu {

class GraphDevice;

// An empty graph for vectors of `dim` floats. metric: l2 or inner_product (cosine: the caller
// normalises vectors and queries and asks for inner_product).
GraphDevice* graph_create(Resources& resources, int64_t dim, Metric metric);
// nullptr: no-op. No call using the graph may be running.
void graph_free(GraphDevice* graph) noexcept;

struct GraphDeviceDeleter {
  void operator()(GraphDevice* graph) const noexcept { graph_free(graph); }
};
using GraphDevicePtr = std::unique_ptr<GraphDevice, GraphDeviceDeleter>;
inline GraphDevicePtr make_graph(Resources& resources, int64_t dim, Metric metric) {
  return GraphDevicePtr(graph_create(resources, dim, metric));
}

// Replaces the graph's contents (all or nothing: on out_of_device_memory the old contents stay):
// n vectors (n x dim floats), the adjacency (n x degree row numbers, row-major; entries < 0 are
// unused slots, the rest must be < n), ids (n, the id each row reports; nullptr: the row number),
// the rows every search starts from (entry_count >= 1 of them, each < n), all in host memory.
// 1 <= degree <= kMaxGraphDegree.
constexpr int64_t kMaxGraphDegree = 256;
void graph_upload(Resources& resources, GraphDevice& graph, int64_t n, const float* x, int64_t degree,
                  const int32_t* adjacency, const int64_t* ids, const int32_t* entries, int64_t entry_count);

// SONG's hashing mode (graph/hash_codes.h): the same, with n codes of `dim` 32-bit words each (a
// graph created with dim = the code's words) in place of vectors; such a graph is searched only by
// graph_search_codes, and its rows are reported as row numbers.
void graph_upload_codes(Resources& resources, GraphDevice& graph, int64_t n, const uint32_t* codes, int64_t degree,
                        const int32_t* adjacency, const int32_t* entries, int64_t entry_count);

// The entry layer (graph/entry_layer.h): a small graph over `rows` sampled rows of the uploaded
// graph (their vectors, rows x the graph's dim; adjacency over sample indices; graph_rows: each
// sample's row in the whole graph; entries: sample indices), walked first with a queue of `width`
// for each query's `starts` best rows, from which the walk over the whole graph starts instead of
// the graph's entry points: it begins near the query rather than spread over the data. Replaces the
// layer of an earlier call; graph_upload drops it (a graph's rows change), rows == 0 uploads none.
// All or nothing, as graph_upload. A hashed graph's layer holds its rows' codes (rows x the graph's
// dim words) in place of vectors, and is walked by Hamming distance as the graph is.
struct GraphLayer {
  int64_t rows = 0;
  const float* vectors = nullptr;
  const uint32_t* codes = nullptr;  // a hashed graph's: in place of vectors
  int64_t degree = 0;
  const int32_t* adjacency = nullptr;
  const int32_t* graph_rows = nullptr;
  const int32_t* entries = nullptr;
  int64_t entry_count = 0;
  int64_t width = 0;   // k .. kMaxSearchWidth
  int64_t starts = 0;  // 1 .. width
};
void graph_upload_layer(Resources& resources, GraphDevice& graph, const GraphLayer& layer);

int64_t graph_rows(const GraphDevice& graph);
int64_t graph_device_bytes(const GraphDevice& graph);
// The uploaded vectors on the device (rows x dim floats, row-major), for searches of other kinds
// over them (the exact range search); nullptr for an empty or hashed graph.
const float* graph_vectors(const GraphDevice& graph);

// What a walk's visited set is (SONG §IV): an open-addressing table of the rows (exact; visited
// deletion keeps it to the queue's rows), or a filter in the same shared memory: a Bloom filter
// (3 bits a row, no deletion, 32 bits a row before it is rebuilt from the queue) or a Cuckoo filter
// (16-bit fingerprints, with deletion). A filter's false positives drop a candidate now and then
// (recall, not correctness: results stay sorted, distinct and exact).
enum class VisitedSet { hash_table = 0, bloom = 1, cuckoo = 2 };

struct GraphSearchOptions {
  // Queue size (SONG's K), k .. kMaxSearchWidth; the recall/speed knob.
  int64_t search_width = 64;
  // Nodes expanded per iteration (SONG's multi-step probing), 1 .. kMaxProbes.
  int64_t probes = 1;
  // Walk over a 16-bit copy of the vectors (float16; bfloat16 where a value is beyond float16's
  // range), made on the device at the first such search and kept until the next upload: half the
  // bytes a distance reads. The queue's rows are then re-ranked with float32 distances, so the
  // distances returned are exact.
  bool half_walk = false;
  // Warps searching one query together (1 .. 16; 0: automatic, several only for batches smaller
  // than the device's SM count): they share each expansion's distances, which shortens one query's
  // chain of dependent expansions (batch-1 latency) and leaves results unchanged.
  int64_t warps_per_query = 0;
  // Queries one warp searches at once (SONG's multi-query per warp): 1, 2 or 4. With 2 or 4 the
  // warp's lanes split into groups of 16 or 8, each walking its own query with its own queue and
  // visited set, so a warp needs 2 or 4 times one query's shared memory (invalid_argument where that
  // is more than the device has), and a distance takes at most the group's lanes (one query a warp:
  // 4 lanes up to 64 dimensions, 8 up to 128, 16 up to 256, 32 beyond). Meant for small dimensions,
  // where locating candidates and short distances leave most of a warp's lanes idle. Each query
  // walks as it does with 1, so the results are the same, but for rounding where a distance takes
  // fewer lanes than with 1 (above 128 dimensions with 4, above 256 with 2) and for a visited filter
  // (bloom, cuckoo), which inserts an iteration's rows in rounds of the group's lanes, so that its
  // rare false positives may fall on other rows. No crews: warps_per_query 0 (then no crew) or 1.
  // graph_search_codes takes it too. Slower on an H100 at every dimension measured (1M uniform
  // vectors of 16 and 32 dimensions, synthetic 1M x 128: 2 queries a warp 1.5-1.9x the time of 1,
  // 4 queries 2.4-5.2x), so 1 stays the default.
  int64_t queries_per_warp = 1;
  // Rows that may be returned (traversal goes through every row).
  RowFilter filter;
  // The visited set. The Bloom filter by default: on an H100 (1M x 128, bench/gpu_graph_bench.sh
  // --visited table,bloom,cuckoo) it answers 13-16% more queries a second than the table at widths
  // 64-128, 4-7% more at 32-48 and as many at 16-24, with the same recall to four decimals; the
  // Cuckoo filter is as fast as the table or slower.
  VisitedSet visited = VisitedSet::bloom;
};
constexpr int64_t kMaxSearchWidth = 1024;
constexpr int64_t kMaxProbes = 8;

// Searches the k (1 .. search_width) nearest rows of each of nq queries (host or device memory);
// writes distances (L2: squared; inner product: the product, largest first) and ids (the uploaded
// ids), closest first, padded with missing values and -1 where fewer than k allowed rows were
// reached; outputs in host or device memory. Throws invalid_argument on an empty graph.
void graph_search(Resources& resources, const GraphDevice& graph, int64_t nq, const float* queries, int64_t k,
                  const GraphSearchOptions& options, float* distances, int64_t* ids);

// The walk of a hashed graph (graph_upload_codes) by Hamming distance from each of nq query codes
// (nq x dim words, host or device memory): writes each query's final queue, the rows nearest by
// Hamming distance (ties by row), nq x search_width, -1 past the rows reached, for the caller to
// re-rank with exact distances. options: no filter, no half walk.
void graph_search_codes(Resources& resources, const GraphDevice& graph, int64_t nq, const uint32_t* query_codes,
                        const GraphSearchOptions& options, int64_t* rows);

}  // namespace quiver::gpu
