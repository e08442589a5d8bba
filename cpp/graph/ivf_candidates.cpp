#include "cpp/graph/ivf_candidates.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "cpp/cluster/kmeans.h"
#include "cpp/core/progress.h"
#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/exact/knn.h"
#include "cpp/graph/neighbour_lists.h"

namespace quiver {

namespace {

// k-means here only has to put near points together: a few iterations on a small sample are
// enough, and the searches that follow are exact whatever the partition.
constexpr int64_t kKmeansIterations = 5;
constexpr int64_t kKmeansPointsPerCentroid = 32;
// Lists searched per parallel step, as a share of all lists: progress and cancel granularity.
constexpr int64_t kProgressSteps = 32;

// The lists of each list's probes: itself first, then the nearest centroids by the metric.
std::vector<int64_t> probed_lists(Metric metric, int64_t dim, int64_t nlist, const float* centroids,
                                  int64_t probes) {
  std::vector<int64_t> out(static_cast<size_t>(nlist * probes));
  std::vector<std::pair<float, int64_t>> order(static_cast<size_t>(nlist));
  for (int64_t c = 0; c < nlist; ++c) {
    const float* a = centroids + c * dim;
    for (int64_t j = 0; j < nlist; ++j) {
      const float* b = centroids + j * dim;
      // Inner products rank lists by the similarity of their centroids; L2 and cosine (unit rows
      // clustered in L2) by distance.
      const float key = metric == Metric::inner_product ? -dot(a, b, dim) : squared_l2(a, b, dim);
      order[j] = {j == c ? -std::numeric_limits<float>::infinity() : key, j};
    }
    std::partial_sort(order.begin(), order.begin() + probes, order.end());
    for (int64_t p = 0; p < probes; ++p) out[c * probes + p] = order[p].second;
  }
  return out;
}

// One list's points against the points of its probed lists, exactly; their best offered both ways.
void search_list(Metric metric, int64_t dim, const float* x, const std::vector<int64_t>& members,
                 const int64_t* probes, int64_t nprobe, const std::vector<std::vector<int64_t>>& by_list,
                 NeighbourLists& lists) {
  if (members.empty()) return;
  std::vector<int64_t> ids;
  for (int64_t p = 0; p < nprobe; ++p) ids.insert(ids.end(), by_list[probes[p]].begin(), by_list[probes[p]].end());
  // Rows in id order: the exact search breaks ties by row, which is then the smaller id.
  std::sort(ids.begin(), ids.end());
  const int64_t m = static_cast<int64_t>(ids.size());
  std::vector<float> base(static_cast<size_t>(m * dim));
  for (int64_t r = 0; r < m; ++r) std::copy_n(x + ids[r] * dim, dim, &base[r * dim]);
  const int64_t nq = static_cast<int64_t>(members.size());
  std::vector<float> queries(static_cast<size_t>(nq * dim));
  for (int64_t q = 0; q < nq; ++q) std::copy_n(x + members[q] * dim, dim, &queries[q * dim]);

  Database db;
  db.x = base.data();
  db.n = m;
  db.dim = dim;
  db.ids = ids.data();
  db.metric = metric;
  std::vector<float> norms;
  if (metric == Metric::l2) {
    norms = squared_norms(db.x, m, dim);
    db.norms = norms.data();
  }
  // One more than the list holds: the point itself is among its nearest.
  const int64_t k = std::min(lists.capacity() + 1, m);
  std::vector<float> distances(static_cast<size_t>(nq * k));
  std::vector<int64_t> found(static_cast<size_t>(nq * k));
  // A pool of one: this list is one task of the caller's parallel loop already.
  ThreadPool inline_pool(1);
  exact_knn(inline_pool, db, Queries{queries.data(), nq}, k, IdFilter{}, distances.data(), found.data());
  const bool similarity = larger_is_closer(metric);
  for (int64_t q = 0; q < nq; ++q) {
    const int64_t u = members[q];
    for (int64_t j = 0; j < k; ++j) {
      const int64_t v = found[q * k + j];
      if (v < 0 || v == u) continue;
      const float key = similarity ? -distances[q * k + j] : distances[q * k + j];
      lists.offer(u, key, static_cast<int32_t>(v));
      lists.offer(v, key, static_cast<int32_t>(u));
    }
  }
}

}  // namespace

bool ivf_candidates(ThreadPool& pool, Metric metric, int64_t dim, int64_t n, const float* x,
                    const IvfCandidateOptions& options, NeighbourLists& lists, const Progress& progress) {
  const int64_t nlist = std::clamp<int64_t>(options.lists, 1, n);
  const int64_t nprobe = std::clamp<int64_t>(options.probes, 1, nlist);
  std::vector<float> centroids(static_cast<size_t>(nlist * dim));
  std::vector<int64_t> assignment(static_cast<size_t>(n));
  KmeansOptions km;
  km.iterations = kKmeansIterations;
  km.seed = options.seed;
  km.max_points_per_centroid = kKmeansPointsPerCentroid;
  kmeans(pool, dim, n, x, nlist, km, centroids.data(), assignment.data());
  progress.report(0.25);

  std::vector<std::vector<int64_t>> by_list(static_cast<size_t>(nlist));
  for (int64_t i = 0; i < n; ++i) by_list[assignment[i]].push_back(i);
  const std::vector<int64_t> probes = probed_lists(metric, dim, nlist, centroids.data(), nprobe);

  // The largest searches first, so that the last tasks of each step are short ones.
  std::vector<int64_t> work(static_cast<size_t>(nlist));
  for (int64_t c = 0; c < nlist; ++c) {
    int64_t rows = 0;
    for (int64_t p = 0; p < nprobe; ++p) rows += static_cast<int64_t>(by_list[probes[c * nprobe + p]].size());
    work[c] = rows * static_cast<int64_t>(by_list[c].size());
  }
  std::vector<int64_t> order(static_cast<size_t>(nlist));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return work[a] > work[b]; });

  const int64_t step = std::max<int64_t>(1, (nlist + kProgressSteps - 1) / kProgressSteps);
  for (int64_t first = 0; first < nlist; first += step) {
    const int64_t count = std::min(step, nlist - first);
    pool.parallel_for(count, [&](int64_t t) {
      const int64_t c = order[first + t];
      search_list(metric, dim, x, by_list[c], &probes[c * nprobe], nprobe, by_list, lists);
    });
    progress.report(0.25 + 0.75 * double(first + count) / double(nlist));
  }
  return nprobe == nlist;
}

}  // namespace quiver
