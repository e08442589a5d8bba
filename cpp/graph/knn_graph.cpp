#include "cpp/graph/knn_graph.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/backend/gpu_ivf.h"
#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/core/gather_rows.h"
#include "cpp/core/input.h"
#include "cpp/core/progress.h"
#include "cpp/graph/approximate_plan.h"
#include "cpp/graph/exact_neighbours.h"
#include "cpp/graph/ivf_candidates.h"
#include "cpp/graph/neighbour_lists.h"
#include "cpp/graph/nn_descent.h"
#include "cpp/graph/recall_estimate.h"
#include "cpp/index/index.h"

namespace quiver {

namespace {

// Queries per exact search call: large enough for the GEMM path, small enough for progress and
// cancel to come every few seconds on a CPU.
constexpr int64_t kExactChunkCpu = 4096;
constexpr int64_t kExactChunkGpu = 16384;
// Points whose exact neighbours tell the approximate build when its lists reach the target: with k
// neighbours each, a few hundred points measure recall to about +-0.01.
constexpr int64_t kControlSample = 256;
// What the control sample must show above the target before the build stops refining.
constexpr double kControlMargin = 0.01;

// Point first_row + r's k neighbours (row r of neighbours and distances, rows x k) from its k + 1
// nearest points (row r of found_d and found_i), itself dropped. With duplicates of the point, the
// search may order it after its twins (ties by id) or leave it out; either way it is skipped and the
// first k others are kept. distances may be null.
void drop_self(int64_t first_row, int64_t rows, int64_t k, const float* found_d, const int64_t* found_i,
               int32_t* neighbours, float* distances) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t self = first_row + r;
    int64_t out = 0;
    for (int64_t j = 0; j <= k && out < k; ++j) {
      const int64_t id = found_i[r * (k + 1) + j];
      if (id == self) continue;
      neighbours[r * k + out] = static_cast<int32_t>(id);
      if (distances != nullptr) distances[r * k + out] = found_d[r * (k + 1) + j];
      ++out;
    }
  }
}

void exact_graph(Context& context, Metric metric, int64_t dim, int64_t n, const Input& input, int64_t k,
                 const Progress& progress, int32_t* neighbours, float* distances) {
  ExactNeighbours exact(context, metric, dim, n, input);
  const int64_t chunk = std::min(n, context.device() == DeviceKind::cuda ? kExactChunkGpu : kExactChunkCpu);
  std::vector<float> found_d(static_cast<size_t>(chunk * (k + 1)));
  std::vector<int64_t> found_i(static_cast<size_t>(chunk * (k + 1)));
  for (int64_t first = 0; first < n; first += chunk) {
    const int64_t rows = std::min(chunk, n - first);
    exact.search_rows(first, rows, k + 1, found_d.data(), found_i.data());
    drop_self(first, rows, k, found_d.data(), found_i.data(), neighbours + first * k,
              distances != nullptr ? distances + first * k : nullptr);
    progress.report(double(first + rows) / double(n));
  }
}

// Candidate lists from an inverted file, refined by NN-descent until a control sample's recall
// reaches the target (or the lists stop changing); the first k of each list written out.
int64_t approximate_graph(Context& context, Metric metric, int64_t dim, int64_t n, const float* x,
                          ExactNeighbours& exact, const KnnGraphOptions& options, Progress& progress,
                          int32_t* neighbours, float* distances) {
  const ApproximatePlan plan = plan_approximate(metric, n, options.k, options.target_recall);
  NeighbourLists lists(n, plan.capacity);
  IvfCandidateOptions ivf;
  ivf.lists = plan.lists;
  ivf.probes = plan.probes;
  ivf.seed = options.seed;
  progress.phase(0.0, 0.4);
  const bool exhaustive = ivf_candidates(context.pool(), metric, dim, n, x, ivf, lists, progress);
  complete_lists(context.pool(), metric, dim, n, x, options.seed, lists);
  const RecallSample control(exact, metric, dim, n, x, options.k, kControlSample, ~options.seed);
  const double aim = std::min(1.0, options.target_recall + kControlMargin);
  NnDescentOptions nnd;
  nnd.max_iterations = exhaustive || control.recall(lists) >= aim ? 0 : plan.iterations;
  nnd.good_enough = [&] { return control.recall(lists) >= aim; };
  nnd.sample = plan.sample;
  nnd.delta = plan.delta;
  nnd.seed = options.seed;
  progress.phase(0.4, 0.95);
  const NnDescentStats stats = nn_descent(context.pool(), metric, dim, n, x, nnd, lists, progress);
  const bool similarity = larger_is_closer(metric);
  const int64_t k = options.k;
  for (int64_t u = 0; u < n; ++u)
    for (int64_t j = 0; j < k; ++j) {
      neighbours[u * k + j] = lists.ids(u)[j];
      if (distances) distances[u * k + j] = similarity ? -lists.keys(u)[j] : lists.keys(u)[j];
    }
  return stats.iterations;
}

// The approximate method on a CUDA context: an inverted file of the points on the device (k-means
// lists trained there, IVF-Flat), every point searched in its nprobe nearest lists for its k + 1
// nearest, itself dropped; nprobe doubles from kFirstProbes until the control sample's recall
// reaches the target (or every list is probed). Points left short of k neighbours (tiny lists) get
// the exact ones.
constexpr int64_t kPointsPerList = 256;
constexpr int64_t kMaxLists = 65536;
constexpr int64_t kFirstProbes = 8;
constexpr int64_t kListIterations = 10;
constexpr int64_t kTrainPointsPerList = 32;  // the lists only route the searches: a sample trains them
constexpr int64_t kDeviceChunk = 65536;

void device_search(gpu::Resources& gpu, const gpu::IvfDevice& ivf, int64_t nprobe, int64_t nq, const float* queries,
                   int64_t k, std::vector<float>& found_d, std::vector<int64_t>& found_i) {
  gpu::IvfSearchOptions search;
  search.nprobe = nprobe;
  found_d.resize(static_cast<size_t>(nq * (k + 1)));
  found_i.resize(static_cast<size_t>(nq * (k + 1)));
  gpu::ivf_search(gpu, ivf, nq, queries, k + 1, search, found_d.data(), found_i.data());
}

void device_approximate_graph(Context& context, Metric metric, int64_t dim, int64_t n, const float* x,
                              ExactNeighbours& exact, const KnnGraphOptions& options, Progress& progress,
                              int32_t* neighbours, float* distances) {
  gpu::Resources& gpu = context.gpu();
  const int64_t k = options.k;
  const int64_t nlist = std::clamp<int64_t>(n / kPointsPerList, 1, kMaxLists);
  std::vector<float> centroids(static_cast<size_t>(nlist * dim));
  KmeansOptions lists;
  lists.iterations = kListIterations;
  lists.seed = options.seed;
  lists.max_points_per_centroid = kTrainPointsPerList;
  progress.phase(0.0, 0.95);
  gpu::kmeans(gpu, dim, n, x, nlist, lists, centroids.data(), nullptr);
  gpu::IvfModelView model;
  model.metric = metric == Metric::l2 ? Metric::l2 : Metric::inner_product;  // cosine: x is normalised
  model.dim = dim;
  model.nlist = nlist;
  model.centroids = centroids.data();
  gpu::IvfDevicePtr ivf = gpu::make_ivf(gpu, model);
  std::vector<int64_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[i] = i;
  gpu::ivf_add(gpu, *ivf, n, x, rows.data(), nullptr);
  progress.report(0.1);

  const RecallSample control(exact, metric, dim, n, x, k, kControlSample, ~options.seed);
  const int64_t m = static_cast<int64_t>(control.points().size());
  std::vector<float> found_d, control_d(static_cast<size_t>(m * k));
  std::vector<int64_t> found_i;
  std::vector<int32_t> control_i(static_cast<size_t>(m * k));
  const double aim = std::min(1.0, options.target_recall + kControlMargin);
  int64_t nprobe = std::min(nlist, kFirstProbes);
  for (;; nprobe = std::min(nlist, 2 * nprobe)) {
    device_search(gpu, *ivf, nprobe, m, control.point_vectors().data(), k, found_d, found_i);
    for (int64_t q = 0; q < m; ++q)
      drop_self(control.points()[q], 1, k, &found_d[q * (k + 1)], &found_i[q * (k + 1)], &control_i[q * k],
                &control_d[q * k]);
    if (nprobe == nlist || control.recall_of_sample(control_i.data(), control_d.data()) >= aim) break;
  }

  std::vector<int64_t> short_rows;
  for (int64_t first = 0; first < n; first += kDeviceChunk) {
    const int64_t rows_here = std::min(kDeviceChunk, n - first);
    device_search(gpu, *ivf, nprobe, rows_here, x + first * dim, k, found_d, found_i);
    drop_self(first, rows_here, k, found_d.data(), found_i.data(), neighbours + first * k,
              distances != nullptr ? distances + first * k : nullptr);
    for (int64_t r = first; r < first + rows_here; ++r)
      if (neighbours[r * k + k - 1] < 0) short_rows.push_back(r);
    progress.report(0.1 + 0.9 * double(first + rows_here) / double(n));
  }
  if (short_rows.empty()) return;
  // Every list, in one search: exact.
  const int64_t m_short = static_cast<int64_t>(short_rows.size());
  device_search(gpu, *ivf, nlist, m_short, gather_rows(x, dim, short_rows).data(), k, found_d, found_i);
  for (int64_t i = 0; i < m_short; ++i) {
    const int64_t r = short_rows[i];
    drop_self(r, 1, k, &found_d[i * (k + 1)], &found_i[i * (k + 1)], neighbours + r * k,
              distances != nullptr ? distances + r * k : nullptr);
  }
}

KnnGraphStats build(Context& context, Metric metric, int64_t dim, int64_t n, const float* x,
                    const KnnGraphOptions& options, int32_t* neighbours, float* distances) {
  require(is_valid_metric(static_cast<int32_t>(metric)), "metric: ", static_cast<int32_t>(metric),
          " is not QV_METRIC_L2, QV_METRIC_INNER_PRODUCT or QV_METRIC_COSINE");
  require(dim >= 1 && dim <= kMaxDim, "dim = ", dim, " is outside 1 .. ", kMaxDim);
  require(n >= 2, "n = ", n, " must be at least 2");
  require(n <= INT32_MAX, "n = ", n, " is above the graph's 32-bit ids");
  require(options.k >= 1 && options.k < n && options.k < kMaxK, "k = ", options.k, " is outside 1 .. ",
          std::min(n, kMaxK) - 1);
  require(x != nullptr, "x is null");
  require(neighbours != nullptr, "neighbours is null");
  require(options.method == KnnGraphMethod::automatic || options.method == KnnGraphMethod::exact ||
              options.method == KnnGraphMethod::approximate,
          "method = ", static_cast<int32_t>(options.method), " is not automatic (0), exact (1) or approximate (2)");
  require(options.target_recall > 0 && options.target_recall <= 1, "target_recall = ", options.target_recall,
          " is outside (0, 1]");
  require(options.recall_sample >= 0, "recall_sample = ", options.recall_sample, " is negative");
  const auto start = std::chrono::steady_clock::now();
  KnnGraphStats stats;
  // Asking for every neighbour is asking for the exact graph.
  const bool want_all = options.method == KnnGraphMethod::automatic && options.target_recall >= 1;
  stats.method = want_all ? KnnGraphMethod::exact : resolve_knn_graph_method(context, options.method, n, dim);
  Progress progress(options.progress, "knn_graph");
  const bool gpu = context.device() == DeviceKind::cuda;
  // The approximate builders read rows on the host; the exact search reads them where they are.
  const Input input = prepare_input(context, "x", x, n, dim, metric, gpu && stats.method == KnnGraphMethod::exact);
  progress.report(0);  // a first chance to cancel, before the first long step
  if (stats.method == KnnGraphMethod::exact) {
    exact_graph(context, metric, dim, n, input, options.k, progress, neighbours, distances);
    stats.recall = 1;
  } else {
    // Distances are kept for the recall estimate even when the caller does not want them.
    std::vector<float> own_distances;
    if (distances == nullptr && options.recall_sample > 0) {
      own_distances.resize(static_cast<size_t>(n * options.k));
      distances = own_distances.data();
    }
    ExactNeighbours exact(context, metric, dim, n, input);
    bool done = false;
    if (gpu) {
      try {
        device_approximate_graph(context, metric, dim, n, input.data, exact, options, progress, neighbours, distances);
        done = true;
      } catch (const Error& e) {
        // The device's inverted file does not fit, or refuses this dimension or k: the host builds.
        if (e.status() != Status::out_of_device_memory && e.status() != Status::invalid_argument) throw;
      }
    }
    if (!done)
      stats.iterations =
          approximate_graph(context, metric, dim, n, input.data, exact, options, progress, neighbours, distances);
    if (options.recall_sample > 0) {
      progress.phase(0.95, 1.0);
      progress.report(0);
      const RecallSample sample(exact, metric, dim, n, input.data, options.k, options.recall_sample, options.seed);
      stats.recall = sample.recall(neighbours, distances);
    }
    progress.phase(0, 1);
    progress.report(1);
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace

KnnGraphMethod resolve_knn_graph_method(const Context& context, KnnGraphMethod method, int64_t n, int64_t dim) {
  if (method != KnnGraphMethod::automatic) return method;
  const double work = double(n) * double(n) * double(dim);
  return work <= exact_work_limit(context.device() == DeviceKind::cuda) ? KnnGraphMethod::exact
                                                                          : KnnGraphMethod::approximate;
}

KnnGraphStats knn_graph(Context& context, Metric metric, int64_t dim, int64_t n, const float* x,
                        const KnnGraphOptions& options, int32_t* neighbours, float* distances) {
  // Caller outputs in device memory are written through host copies.
  const bool device_out = gpu::is_device_pointer(neighbours) || gpu::is_device_pointer(distances);
  if (!device_out) return build(context, metric, dim, n, x, options, neighbours, distances);
  require(n >= 2 && options.k >= 1 && options.k < n, "k = ", options.k, " is outside 1 .. n - 1");
  std::vector<int32_t> ids(static_cast<size_t>(n * options.k));
  std::vector<float> dist(distances ? static_cast<size_t>(n * options.k) : 0);
  const KnnGraphStats stats = build(context, metric, dim, n, x, options, ids.data(), distances ? dist.data() : nullptr);
  gpu::copy_memory(context.gpu(), neighbours, ids.data(), n * options.k * int64_t(sizeof(int32_t)));
  if (distances) gpu::copy_memory(context.gpu(), distances, dist.data(), n * options.k * int64_t(sizeof(float)));
  return stats;
}

KnnGraphStats knn_graph_ids64(Context& context, Metric metric, int64_t dim, int64_t n, const float* x,
                              const KnnGraphOptions& options, int64_t* ids, float* distances) {
  require(ids != nullptr, "ids is null");
  require(n >= 2 && options.k >= 1 && options.k < n && options.k < kMaxK, "k = ", options.k,
          " is outside 1 .. ", std::min(n, kMaxK) - 1);
  std::vector<int32_t> narrow(static_cast<size_t>(n * options.k));
  const bool device_ids = gpu::is_device_pointer(ids);
  const KnnGraphStats stats = knn_graph(context, metric, dim, n, x, options, narrow.data(), distances);
  if (!device_ids) {
    std::copy(narrow.begin(), narrow.end(), ids);
    return stats;
  }
  const std::vector<int64_t> wide(narrow.begin(), narrow.end());
  gpu::copy_memory(context.gpu(), ids, wide.data(), n * options.k * int64_t(sizeof(int64_t)));
  return stats;
}

}  // namespace quiver
