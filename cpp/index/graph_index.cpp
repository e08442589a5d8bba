#include "cpp/index/graph_index.h"

#include <algorithm>

#include "cpp/core/error.h"
#include "cpp/graph/graph_build.h"
#include "cpp/graph/graph_insert.h"
#include "cpp/graph/walk_space.h"
#include "cpp/index/graph_payload.h"
#include "cpp/io/bytes.h"

namespace quiver {

namespace {

// Pool width of the searches that find an inserted vector's neighbours: wider than a query's
// default, since a row's edges serve every later search.
constexpr int64_t kInsertWidthFactor = 4;

GraphBuildParams build_params(const GraphSpec& spec) {
  GraphBuildParams p;
  p.prune.degree = spec.degree;
  p.knn_k = spec.knn_k;
  p.connect_width = std::max<int64_t>(kDefaultGraphSearchWidth, spec.degree);
  return p;
}

}  // namespace

GraphIndex::GraphIndex(Context& context, std::string descriptor, int64_t dim, Metric metric, const GraphSpec& spec)
    : Index(context, std::move(descriptor), dim, metric), spec_(spec), graph_(0, spec.degree) {
  if (context.device() == DeviceKind::cuda)
    device_copy_ = std::make_unique<GraphGpuCopy>(context.gpu(), dim, metric, spec.hash_bits);
}

void GraphIndex::update_device_copy() {
  if (!device_copy_) return;
  device_copy_current_ = false;
  try {
    device_copy_->upload(context().pool(), data());
    device_copy_current_ = true;
  } catch (const Error& e) {
    if (e.status() != Status::out_of_device_memory) throw;
  }
}

bool GraphIndex::cpu_walks_projection() const { return !device_copy_ && walks_projection(dim(), metric()); }

bool GraphIndex::searches_on_device(int64_t k, int64_t width) const {
  return device_copy_current_ && width <= gpu::kMaxSearchWidth && k <= width &&
         spec_.degree <= gpu::kMaxGraphDegree;
}

int64_t GraphIndex::walk_width(int64_t k, const SearchOptions& options) const {
  const int64_t width =
      options.search_width == 0 ? std::max(k, kDefaultGraphSearchWidth) : std::max<int64_t>(k, options.search_width);
  return std::min(width, std::max<int64_t>(rows(), k));
}

bool GraphIndex::searches_device_memory(int64_t k, const SearchOptions& options) const {
  return searches_on_device(k, walk_width(k, options)) && device_copy_->holds_vectors();
}

GraphData GraphIndex::data() const {
  GraphData d;
  d.graph = &graph_;
  d.vectors = vectors_.data();
  d.dim = dim();
  d.metric = metric();
  d.ids = ids_.data();
  d.removed = removed_count_ > 0 ? removed_.data() : nullptr;
  d.entries = entries_.data();
  d.n_entries = static_cast<int64_t>(entries_.size());
  d.walk = walk_.dim > 0 ? &walk_ : nullptr;
  d.layer = layer_.empty() ? nullptr : &layer_;
  return d;
}

EntryLayer GraphIndex::make_layer(const float* vectors, int64_t rows, const std::vector<int32_t>& entries) const {
  // Walks over projections start from the entries: wide vectors are near enough already.
  if (cpu_walks_projection()) return EntryLayer{};
  return build_entry_layer(context(), metric(), vectors, rows, dim(), entries.data(),
                           static_cast<int64_t>(entries.size()));
}

void GraphIndex::require_built(const char* operation) const {
  if (!built_)
    fail(Status::not_trained, "the index (", descriptor(), ") has no graph yet: add vectors before ", operation,
         " (the first add builds the graph)");
}

void GraphIndex::do_add(int64_t n, const float* x, const int64_t* ids) {
  require(rows() + n <= INT32_MAX, "n = ", n, ": the graph would exceed ", INT32_MAX, " rows (32-bit row ids)");
  // An id that belongs to a tombstone may be reused, but only after the tombstone is gone.
  bool reuses_removed = false;
  if (ids != nullptr && removed_count_ > 0)
    for (int64_t row : ids_.rows_of(n, ids)) reuses_removed = reuses_removed || removed_[row];
  const bool whole = !built_ || rows() == 0 || reuses_removed ||
                     static_cast<double>(n) >= kGraphRebuildFraction * static_cast<double>(count());
  std::vector<int64_t> assigned;
  if (!whole) {
    insert(n, x, ids_.check_new(n, ids, assigned));
    return;
  }
  std::vector<int64_t> removed_rows;
  for (int64_t r = 0; r < rows(); ++r)
    if (removed_[r]) removed_rows.push_back(r);
  const IdMap live = ids_.without_rows(removed_rows);
  rebuild(n, x, live.check_new(n, ids, assigned));
}

void GraphIndex::rebuild(int64_t n, const float* x, const int64_t* new_ids) {
  // Everything is built aside; the index changes only in the swaps at the end.
  const int64_t total = count() + n;
  std::vector<float> vectors;
  std::vector<int64_t> ids;
  vectors.reserve(static_cast<size_t>(total * dim()));
  ids.reserve(static_cast<size_t>(total));
  for (int64_t r = 0; r < rows(); ++r) {
    if (removed_[r]) continue;
    vectors.insert(vectors.end(), vectors_.begin() + r * dim(), vectors_.begin() + (r + 1) * dim());
    ids.push_back(ids_.data()[r]);
  }
  vectors.insert(vectors.end(), x, x + n * dim());
  ids.insert(ids.end(), new_ids, new_ids + n);
  IdMap id_map;
  id_map.append(total, ids.data());
  GraphBuildParams params = build_params(spec_);
  params.progress = progress();
  BuiltGraph built = build_graph(context(), metric(), vectors.data(), total, dim(), params);
  std::vector<uint8_t> removed(static_cast<size_t>(total), 0);
  ReducedSpace walk = cpu_walks_projection() ? make_walk_space(context().pool(), vectors.data(), total, dim(), metric())
                                             : ReducedSpace{};
  // The build's layer is the one make_layer would build over these vectors: empty where the build
  // (and so the CPU walk) reads a projection, or below the layer's size.
  EntryLayer layer = std::move(built.layer);

  vectors_.swap(vectors);
  std::swap(ids_, id_map);
  removed_.swap(removed);
  removed_count_ = 0;
  graph_ = std::move(built.graph);
  entries_ = std::move(built.entries);
  walk_ = std::move(walk);
  layer_ = std::move(layer);
  built_ = true;
  scratch_.clear();
  update_device_copy();
}

void GraphIndex::insert(int64_t n, const float* x, const int64_t* new_ids) {
  // Reserve everything first, so that nothing but the insertion itself runs once the index changes.
  const int64_t first = rows();
  vectors_.reserve(static_cast<size_t>((first + n) * dim()));
  removed_.reserve(static_cast<size_t>(first + n));
  graph_.adjacency.reserve(static_cast<size_t>((first + n) * spec_.degree));
  vectors_.insert(vectors_.end(), x, x + n * dim());
  removed_.insert(removed_.end(), static_cast<size_t>(n), 0);
  graph_.adjacency.insert(graph_.adjacency.end(), static_cast<size_t>(n * spec_.degree), kEmptySlot);
  graph_.rows = first + n;
  InsertParams params;
  params.prune.degree = spec_.degree;
  params.width = kInsertWidthFactor * std::max<int64_t>(kDefaultGraphSearchWidth, spec_.degree);
  InsertUndo undo;
  WalkSpaceAppend walk;
  EntryLayer layer;
  try {
    if (cpu_walks_projection()) {
      walk = walk_space_append(context().pool(), walk_, vectors_.data(), first, first + n, dim(), metric());
      if (!walk.remade) walk_.vectors.reserve(walk_.vectors.size() + walk.space.vectors.size());
    }
    insert_rows(graph_, metric(), vectors_.data(), dim(), entries_, layer_.empty() ? nullptr : &layer_, first,
                removed_count_ > 0 ? removed_.data() : nullptr, params, undo);
    // The layer over every row now, the one a load of this index builds: a saved copy answers as
    // this index does.
    layer = make_layer(vectors_.data(), first + n, entries_);
    ids_.append(n, new_ids);
  } catch (...) {
    // Out of memory part way: the old rows get their edges back, the new rows go.
    undo.restore(graph_);
    vectors_.resize(static_cast<size_t>(first * dim()));
    removed_.resize(static_cast<size_t>(first));
    graph_.adjacency.resize(static_cast<size_t>(first * spec_.degree));
    graph_.rows = first;
    throw;
  }
  if (cpu_walks_projection()) apply_walk_space_append(walk_, std::move(walk));
  layer_ = std::move(layer);
  update_device_copy();
}

void GraphIndex::do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                           float* distances, int64_t* ids) const {
  require_built("searching");
  const int64_t clamped = walk_width(k, options);
  if (searches_on_device(k, clamped)) {
    device_copy_->search(context().pool(), data(), scratch_, queries, nq, k, clamped, options.compute_mode,
                         options.graph, options.filter, distances, ids);
    return;
  }
  graph_knn_search(context().pool(), data(), scratch_, queries, nq, k, clamped, options.filter, distances, ids);
}

RangeResult GraphIndex::do_range_search(int64_t nq, const float* queries, float radius,
                                        const SearchOptions& options) const {
  require_built("range searching");
  if (device_copy_current_ && device_copy_->holds_vectors())
    return device_copy_->range_search(data(), queries, nq, radius, options.filter, options.max_range_results);
  return graph_range_scan(context().pool(), data(), queries, nq, radius, options.filter);
}

int64_t GraphIndex::do_remove(int64_t n, const int64_t* ids) {
  int64_t removed = 0;
  for (int64_t row : ids_.rows_of(n, ids)) {
    if (removed_[row]) continue;
    removed_[row] = 1;
    ++removed;
  }
  removed_count_ += removed;
  if (removed > 0 && static_cast<double>(removed_count_) >= kGraphCompactFraction * static_cast<double>(rows()))
    rebuild(0, nullptr, nullptr);
  return removed;
}

MemoryUse GraphIndex::memory() const {
  MemoryUse use;
  use.host_bytes = static_cast<int64_t>(vectors_.capacity() * sizeof(float) + removed_.capacity() +
                                        graph_.adjacency.capacity() * sizeof(int32_t)) +
                   ids_.memory_bytes() + scratch_.memory_bytes() +
                   static_cast<int64_t>((walk_.vectors.capacity() + walk_.basis.capacity()) * sizeof(float)) +
                   entry_layer_bytes(layer_);
  if (device_copy_current_) use.device_bytes = device_copy_->device_bytes();
  return use;
}

void GraphIndex::save_payload(ByteWriter& out) const {
  write_graph_payload(out, graph_, entries_, ids_.data(), removed_.data(), vectors_.data(), dim());
}

void GraphIndex::load_payload(ByteReader& in, int64_t count) {
  GraphPayload p = read_graph_payload(in, count, dim(), spec_.degree);
  EntryLayer layer = make_layer(p.vectors.data(), p.graph.rows, p.entries);
  IdMap ids;
  ids.assign(std::move(p.ids));
  removed_count_ = static_cast<int64_t>(std::count_if(p.removed.begin(), p.removed.end(), [](uint8_t r) { return r != 0; }));
  std::swap(ids_, ids);
  removed_ = std::move(p.removed);
  vectors_ = std::move(p.vectors);
  graph_ = std::move(p.graph);
  entries_ = std::move(p.entries);
  layer_ = std::move(layer);
  built_ = graph_.rows > 0;
  if (cpu_walks_projection()) walk_ = make_walk_space(context().pool(), vectors_.data(), graph_.rows, dim(), metric());
  scratch_.clear();
  update_device_copy();
}

}  // namespace quiver
