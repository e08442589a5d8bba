#include "cpp/graph/graph_build.h"

#include <algorithm>
#include <future>
#include <limits>
#include <vector>

#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/graph/connectivity.h"
#include "cpp/graph/device_refine.h"
#include "cpp/graph/reduced_space.h"

namespace quiver {

namespace {

PruneSpace prune_space(Metric metric, const float* vectors, int64_t dim) {
  PruneSpace space;
  space.vectors = vectors;
  space.dim = dim;
  space.key = prune_key(metric);
  space.l2_keys = metric != Metric::inner_product;
  return space;
}

// n <= degree + 1: every row links every other row, closest first; nothing to prune.
FixedDegreeGraph complete_graph(ThreadPool& pool, Metric metric, const float* vectors, int64_t n, int64_t dim,
                                int32_t degree) {
  FixedDegreeGraph graph(n, degree);
  const KeyFn key = search_key(metric);
  pool.parallel_for(n, [&](int64_t p) {
    std::vector<Neighbour> others;
    for (int64_t q = 0; q < n; ++q)
      if (q != p) others.push_back({key(vectors + p * dim, vectors + q * dim, dim), static_cast<int32_t>(q)});
    std::sort(others.begin(), others.end());
    for (size_t j = 0; j < others.size(); ++j) graph.row(p)[j] = others[j].row;
  });
  return graph;
}

// Step 1 of build_graph: the graph pruned in `space` (of the metric) from the k-NN graph (n x k rows
// and distances in the metric's units, as knn_graph writes them), with reverse edges. keys are turned
// into prune keys in place (the refine reuses them).
FixedDegreeGraph prune_knn_graph(ThreadPool& pool, Metric metric, const PruneSpace& space, int64_t n,
                                 const int32_t* knn, float* keys, int64_t k, const PruneParams& params) {
  // Distances in the metric's units -> prune keys (smaller is closer).
  for (int64_t i = 0; i < n * k; ++i)
    keys[i] = metric == Metric::l2 ? keys[i] : prune_key_of_search_key(metric, -keys[i]);
  const CandidateFn from_knn = [&](int64_t p, std::vector<Neighbour>& list, BeamScratch&) {
    for (int64_t j = 0; j < k; ++j) list.push_back({keys[p * k + j], knn[p * k + j]});
  };
  return merge_reverse_edges(pool, space, choose_rows(pool, space, n, from_knn, params), knn, keys, k, params);
}

// What the refine (build_graph's step 2) reads: the build's space and graph 1's k-NN lists.
struct RefineInputs {
  Metric metric;
  const float* vectors;
  int64_t dim;
  const PruneSpace& space;  // prune_space of the above
  const int32_t* knn;
  const float* keys;  // prune keys
  int64_t k;

  // Appends point p's k-NN list, which every refined row is pruned from too.
  void append_knn(int64_t p, std::vector<Neighbour>& list) const {
    for (int64_t j = 0; j < k; ++j) list.push_back({keys[p * k + j], knn[p * k + j]});
  }
};

// Points the host refines between two progress reports.
constexpr int64_t kHostRefineChunk = 65536;

// Step 2's chosen rows, each point pruned from what a search for it on graph 1 computed (the
// closest params.refine_candidates rows) and its k-NN list.
FixedDegreeGraph refine_on_host(Context& context, const RefineInputs& in, const FixedDegreeGraph& graph,
                                const std::vector<int32_t>& entries, const EntryLayer& layer,
                                const GraphBuildParams& params, const Progress& progress) {
  GraphView view;
  view.graph = &graph;
  view.vectors = in.vectors;
  view.dim = in.dim;
  view.key = search_key(in.metric);
  const int64_t cap = params.refine_candidates;
  const CandidateFn from_search = [&](int64_t p, std::vector<Neighbour>& list, BeamScratch& scratch) {
    thread_local std::vector<Neighbour> best;
    thread_local std::vector<int32_t> starts;
    const float* point = in.vectors + p * in.dim;
    const WalkStarts from = walk_starts(layer.empty() ? nullptr : &layer, entries.data(),
                                        static_cast<int64_t>(entries.size()), in.dim, view.key, point, scratch, best,
                                        starts);
    beam_search(view, point, from.rows, from.count, params.refine_width, 1, nullptr, scratch, best, &list);
    if (static_cast<int64_t>(list.size()) > cap) {
      std::nth_element(list.begin(), list.begin() + cap, list.end());
      list.resize(static_cast<size_t>(cap));
    }
    for (Neighbour& c : list) c.key = prune_key_of_search_key(in.metric, c.key);
    in.append_knn(p, list);
  };
  const int64_t n = graph.rows;
  FixedDegreeGraph chosen(n, params.prune.degree);
  for (int64_t first = 0; first < n; first += kHostRefineChunk) {
    const int64_t last = std::min(n, first + kHostRefineChunk);
    choose_rows(context.pool(), in.space, first, last, from_search, params.prune, chosen);
    progress.report(double(last) / double(n));
  }
  return chosen;
}

// The same with the searches on the context's device (device_refine.h), a chunk of points at a time;
// an empty graph where the device cannot walk graph 1 (out of memory; a degree, width or dimension
// beyond its limits): the host then refines.
FixedDegreeGraph refine_on_device(Context& context, const RefineInputs& in, const FixedDegreeGraph& graph,
                                  const std::vector<int32_t>& entries, const EntryLayer& layer,
                                  const GraphBuildParams& params, const Progress& progress) {
  const int64_t n = graph.rows;
  if (graph.degree > gpu::kMaxGraphDegree || params.refine_candidates > gpu::kMaxSearchWidth)
    return FixedDegreeGraph(0, params.prune.degree);
  FixedDegreeGraph chosen(n, params.prune.degree);
  try {
    DeviceRefineSearch search(context, in.metric, in.vectors, n, in.dim, graph, entries, layer,
                              params.refine_candidates);
    DeviceRefineSearch::Chunk chunk = search.search(0, std::min(n, kDeviceRefineChunk));
    const CandidateFn from_search = [&](int64_t p, std::vector<Neighbour>& list, BeamScratch&) {
      search.candidates(chunk, p, list);
      in.append_knn(p, list);
    };
    for (int64_t first = 0; first < n; first += kDeviceRefineChunk) {
      const int64_t last = std::min(n, first + kDeviceRefineChunk);
      // The device walks the next chunk while the host prunes this one.
      std::future<DeviceRefineSearch::Chunk> next;
      if (last < n)
        next = std::async(std::launch::async,
                          [&search, last, n] { return search.search(last, std::min(n, last + kDeviceRefineChunk)); });
      choose_rows(context.pool(), in.space, first, last, from_search, params.prune, chosen);
      if (last < n) chunk = next.get();
      progress.report(double(last) / double(n));
    }
  } catch (const Error& e) {
    // invalid_argument: the walk's shared memory for this dimension is more than the device has.
    if (e.status() != Status::out_of_device_memory && e.status() != Status::invalid_argument) throw;
    return FixedDegreeGraph(0, params.prune.degree);
  }
  return chosen;
}

}  // namespace

int32_t medoid(const float* vectors, int64_t n, int64_t dim) {
  if (n <= 0) return -1;
  std::vector<double> sum(static_cast<size_t>(dim), 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < dim; ++c) sum[c] += vectors[r * dim + c];
  std::vector<float> mean(static_cast<size_t>(dim));
  for (int64_t c = 0; c < dim; ++c) mean[c] = static_cast<float>(sum[c] / static_cast<double>(n));
  const KeyFn key = search_key(Metric::l2);
  int32_t best = 0;
  float best_key = key(mean.data(), vectors, dim);
  for (int64_t r = 1; r < n; ++r) {
    const float k = key(mean.data(), vectors + r * dim, dim);
    if (k < best_key) {
      best_key = k;
      best = static_cast<int32_t>(r);
    }
  }
  return best;
}

std::vector<int32_t> spread_entries(ThreadPool& pool, const float* vectors, int64_t n, int64_t dim, int64_t count) {
  std::vector<int32_t> entries;
  if (n <= 0) return entries;
  entries.push_back(medoid(vectors, n, dim));
  count = std::min(count, n);
  const KeyFn key = search_key(Metric::l2);
  std::vector<float> nearest(static_cast<size_t>(n), std::numeric_limits<float>::infinity());
  constexpr int64_t kRowsPerTask = 4096;
  const int64_t tasks = (n + kRowsPerTask - 1) / kRowsPerTask;
  std::vector<std::pair<float, int64_t>> farthest(static_cast<size_t>(tasks));
  while (static_cast<int64_t>(entries.size()) < count) {
    const float* last = vectors + static_cast<int64_t>(entries.back()) * dim;
    pool.parallel_for(tasks, [&](int64_t t) {
      std::pair<float, int64_t> best{-1.0f, -1};
      for (int64_t r = t * kRowsPerTask; r < std::min(n, (t + 1) * kRowsPerTask); ++r) {
        nearest[r] = std::min(nearest[r], key(last, vectors + r * dim, dim));
        if (nearest[r] > best.first) best = {nearest[r], r};
      }
      farthest[t] = best;
    });
    std::pair<float, int64_t> best{-1.0f, -1};
    for (const auto& f : farthest)
      if (f.first > best.first) best = f;  // ties: the first task's, the smaller row
    if (best.first <= 0.0f) break;  // every row coincides with an entry
    entries.push_back(static_cast<int32_t>(best.second));
  }
  return entries;
}

BuiltGraph build_graph(Context& context, Metric metric, const float* vectors, int64_t n, int64_t dim,
                       const GraphBuildParams& params) {
  require(n >= 0 && n <= INT32_MAX, "graph build: n = ", n, " is above the graph's 32-bit rows");
  BuiltGraph built;
  const int32_t degree = params.prune.degree;
  built.entries = spread_entries(context.pool(), vectors, n, dim, params.entry_points);
  if (n <= static_cast<int64_t>(degree) + 1) {
    built.graph = complete_graph(context.pool(), metric, vectors, n, dim, degree);
    return built;
  }

  KnnGraphOptions options;
  options.k = std::min(params.knn_k, n - 1);
  options.method = params.knn_method;
  // A CPU build of wide vectors runs on a reduced copy, under L2 (reduced_space.h): the k-NN graph,
  // the pruning and the refining searches read a fraction of the bytes. Inner products keep the full
  // vectors (norms rank too, which a projection blurs); the GPU has the bandwidth.
  ReducedSpace reduced;
  if (context.device() != DeviceKind::cuda && metric != Metric::inner_product)
    reduced = reduce_for_build(context.pool(), vectors, n, dim, options.seed);
  const bool narrow = reduced.dim > 0;
  const Metric build_metric = narrow ? Metric::l2 : metric;
  const float* build_vectors = narrow ? reduced.vectors.data() : vectors;
  const int64_t build_dim = narrow ? reduced.dim : dim;

  // The steps' shares of the reports: about their shares of a CPU build's time.
  Progress progress(params.progress, "graph build");
  progress.phase(0.0, 0.3);
  options.progress = progress.nested();
  std::vector<int32_t> knn(static_cast<size_t>(n * options.k));
  std::vector<float> keys(static_cast<size_t>(n * options.k));
  knn_graph(context, build_metric, build_dim, n, build_vectors, options, knn.data(), keys.data());

  const PruneSpace space = prune_space(build_metric, build_vectors, build_dim);
  const int64_t k = options.k;
  // 1. Rows pruned from the k-NN lists, with reverse edges: a local, well-connected graph.
  built.graph = prune_knn_graph(context.pool(), build_metric, space, n, knn.data(), keys.data(), k, params.prune);
  progress.reach(0.4);
  // 2. As NSG: each row pruned again from what a search for its point on graph 1 computes on its
  // way, plus its k-NN list. The search gives candidates a k-NN list lacks, and pruning keeps those
  // that lead elsewhere, among them the longer edges that let a search cross between clusters.
  if (params.refine_width > 0) {
    // Each search starts near its point, from an entry layer over graph 1's space, as a query's walk
    // does: it finds the point's true neighbours that a walk from the fixed entries, across the
    // clusters in between, misses at this width. Synthetic 1M x 128, Graph32: recall@10 0.9592 ->
    // 0.9659 at width 16 and 0.9946 -> 0.9957 at 48, build 203 -> 170 s. Small sets start from
    // the entries.
    EntryLayer layer = build_entry_layer(context, build_metric, build_vectors, n, build_dim, built.entries.data(),
                                         static_cast<int64_t>(built.entries.size()));
    const RefineInputs in{build_metric, build_vectors, build_dim, space, knn.data(), keys.data(), k};
    progress.phase(0.4, 0.9);
    FixedDegreeGraph chosen = context.device() == DeviceKind::cuda
                                  ? refine_on_device(context, in, built.graph, built.entries, layer, params, progress)
                                  : FixedDegreeGraph(0, degree);
    if (chosen.rows == 0) chosen = refine_on_host(context, in, built.graph, built.entries, layer, params, progress);
    built.graph = merge_reverse_edges(context.pool(), space, chosen, knn.data(), keys.data(), k, params.prune);
    progress.reach(0.95);
    // Over the full vectors, the layer is the one the index's walks start from.
    if (!narrow) built.layer = std::move(layer);
  }
  GraphView view;
  view.graph = &built.graph;
  view.vectors = vectors;
  view.dim = dim;
  view.key = search_key(metric);
  connect_from_entry(built.graph, view, built.entries.front(), std::max<int64_t>(params.connect_width, degree));
  progress.reach(1.0);
  return built;
}

}  // namespace quiver
