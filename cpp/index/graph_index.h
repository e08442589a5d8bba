// "Graph<R>[,K<k>]": a navigable graph of fixed out-degree R over the raw vectors, searched by beam
// search on the CPU (graph_search.h).
//   build   the first add (and any add at least half as large as the index, and compaction) builds
//           the whole graph: k-NN graph (graph/knn_graph.h, on the GPU on a CUDA context) -> pruning
//           to degree R -> connectivity from the medoid entry point (graph/graph_build.h);
//   add     smaller adds insert each vector with local repair (graph/graph_insert.h);
//   remove  marks tombstones: searches traverse them but never return them; once they are half the
//           rows, the graph is rebuilt without them (compaction), as it is when an add reuses a
//           removed id;
//   storage rows x dim floats (normalised for cosine), one row-major rows x R int32 adjacency (the
//           layout the GPU search reads), ids, a tombstone byte per row.
// There is nothing to train; train() validates its input and does nothing. The index is kept in
// host memory on every context. On a CUDA context the build's k-NN graph is computed on the GPU, and
// a copy of vectors, adjacency and ids on the device (graph_gpu.h), replaced after every change,
// serves searches with SONG; where that copy cannot be made (device memory) or the request exceeds
// the GPU search's limits (k or width above 1024, R above 256), searches run on the CPU, with the
// same kind of results.
#pragma once

#include <vector>

#include <memory>

#include "cpp/graph/fixed_degree_graph.h"
#include "cpp/index/graph_gpu.h"
#include "cpp/index/graph_search.h"
#include "cpp/index/graph_spec.h"
#include "cpp/index/id_map.h"
#include "cpp/index/index.h"

namespace quiver {

// search_width when the caller passes 0: max(k, this). Recall@10 is about 0.95 at this width on
// Fashion-MNIST with Graph32.
constexpr int64_t kDefaultGraphSearchWidth = 64;
// An add of at least this fraction of the index's rows rebuilds the whole graph rather than
// inserting one vector at a time: a build is faster per vector and gives a better graph.
constexpr double kGraphRebuildFraction = 0.5;
// Tombstones reaching this fraction of the rows trigger a compaction (a rebuild without them).
constexpr double kGraphCompactFraction = 0.5;

class GraphIndex final : public Index {
 public:
  GraphIndex(Context& context, std::string descriptor, int64_t dim, Metric metric, const GraphSpec& spec);

  IndexKind kind() const override { return IndexKind::graph; }
  bool is_trained() const override { return true; }
  int64_t count() const override { return ids_.size() - removed_count_; }
  bool holds_id(int64_t id) const override {
    const int64_t row = ids_.row_of(id);
    return row >= 0 && !removed_[row];
  }
  MemoryUse memory() const override;
  DeviceKind device() const override { return context().device(); }
  // Vectors live in host memory; device inputs are copied to the host first.
  bool reads_device_memory() const override { return false; }
  // Walks on the device over vectors read device queries and write device outputs in place.
  bool searches_device_memory(int64_t k, const SearchOptions& options) const override;

  void save_payload(ByteWriter& out) const override;
  void load_payload(ByteReader& in, int64_t count) override;

  // What tests and tools inspect.
  const FixedDegreeGraph& graph() const { return graph_; }
  const std::vector<int32_t>& entries() const { return entries_; }
  int64_t rows() const { return graph_.rows; }

 protected:
  void do_train(int64_t, const float*) override {}
  void do_add(int64_t n, const float* x, const int64_t* ids) override;
  void do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                 float* distances, int64_t* ids) const override;
  RangeResult do_range_search(int64_t nq, const float* queries, float radius,
                              const SearchOptions& options) const override;
  int64_t do_remove(int64_t n, const int64_t* ids) override;

 private:
  GraphData data() const;
  void require_built(const char* operation) const;
  // Rebuilds the graph over the live rows plus n new vectors (ids already checked against the live
  // rows); commits only when everything succeeded.
  void rebuild(int64_t n, const float* x, const int64_t* new_ids);
  void insert(int64_t n, const float* x, const int64_t* new_ids);
  // Replaces the device copy after a change of the host copy; on failure (device memory) the copy
  // is dropped and searches run on the CPU until the next change succeeds.
  void update_device_copy();
  // Whether CPU searches walk a projection (walk_): CPU contexts, wide vectors, L2 or cosine.
  bool cpu_walks_projection() const;
  bool searches_on_device(int64_t k, int64_t width) const;
  // The walk's search_width for k and the options: raised to k, at most the rows (and k).
  int64_t walk_width(int64_t k, const SearchOptions& options) const;
  // The entry layer of `rows` rows, built aside (nothing of the index changes if it throws).
  EntryLayer make_layer(const float* vectors, int64_t rows, const std::vector<int32_t>& entries) const;

  GraphSpec spec_;
  std::vector<float> vectors_;   // rows x dim
  IdMap ids_;                    // row -> id, tombstones included
  std::vector<uint8_t> removed_; // row -> tombstone
  int64_t removed_count_ = 0;
  FixedDegreeGraph graph_;
  std::vector<int32_t> entries_;  // entry points, the medoid first
  bool built_ = false;  // a graph was built (searches of an index never added to are refused)
  mutable ScratchPool scratch_;
  EntryLayer layer_;   // where CPU walks over vectors_ start (graph/entry_layer.h); empty: at entries_
  ReducedSpace walk_;  // the CPU walk's projections (graph/walk_space.h); dim 0: the walk reads vectors_
  std::unique_ptr<GraphGpuCopy> device_copy_;  // CUDA contexts only
  bool device_copy_current_ = false;
};

}  // namespace quiver
