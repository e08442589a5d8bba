// gpu_metric.h's metric_knn: the k nearest rows by brute force, List of Clusters or SSS.
//
// Every method ends the same way: a scan writes each query's key for every row of a column chunk
// (its distance, or +inf for a row filtered out or pruned) and the k-selection (cuda/select) keeps
// the k best, continuing from the previous chunk's result, ties to the smaller row. Memory stays
// within the tile budget whatever n is.
//
// The indexes prune with a radius per query that is sure to hold the k nearest: the k-th smallest
// distance to a spread sample of allowed rows (at least k of them measured, so at least k rows lie
// within it; with fewer, the radius is infinite and nothing is pruned). Rows beyond it are never
// among the k nearest, so pruning them (or, for strings, stopping their edit distance at the
// radius) changes nothing: every method returns exactly what brute force returns. Brute force over
// strings takes the same radius for its bound.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "cpp/backend/gpu_metric.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/core/transfer.h"
#include "cuda/metric/metric_device.h"
#include "cuda/metric/metric_scan.h"
#include "cuda/metric/search_plan.h"
#include "cuda/select/select.h"

namespace quiver::gpu {

namespace {

using namespace metric_space;

// The sample that sets the pruning radius: 8k rows (so its k-th distance is near the k/8-quantile
// of the space, not its median), or n/8 up to this many when that is more.
constexpr int64_t kMaxSpreadSample = 4096;
constexpr int64_t kSamplePerK = 8;
// Column chunks of the key matrix hold at least this many rows (fewer when n is smaller).
constexpr int64_t kMinChunkRows = 1024;
// The selection's "no row" (largest int32).
constexpr int32_t kNoRow = INT32_MAX;

int64_t round_up4(int64_t x) { return (x + 3) / 4 * 4; }

}  // namespace

void metric_knn(Resources& resources, const MetricDevice& device, MetricMethod method, const Objects& queries,
                int64_t k, const RowFilter& filter, float* distances, int64_t* rows) {
  DeviceScope device_scope(resources.device());
  require(device.device == resources.device(), "the metric space lives on device ", device.device,
          ", the resources on ", resources.device());
  check_metric_objects("queries", queries, device.dim);
  require(k >= 1 && k <= kMaxSelectK, "k = ", k, " is outside 1 .. ", kMaxSelectK);
  const Prune prune = prune_of(device, method);
  const int64_t nq = queries.n, n = device.rows;
  if (nq == 0) return;
  require(distances != nullptr && rows != nullptr, "distances and rows must not be null");
  if (n == 0) {
    std::fill(distances, distances + nq * k, float_infinity());
    std::fill(rows, rows + nq * k, int64_t(-1));
    return;
  }

  Session session(resources);
  MetricScan scan(resources, device, queries, filter);
  DevicePool& pool = resources.pool();
  cudaStream_t stream = scan.stream;
  const int64_t budget = resources.tile_bytes();
  const bool lc = prune == Prune::list_of_clusters;
  const bool sss = prune == Prune::sss && device.pivots > 0;
  const bool sampled = prune != Prune::none || device.strings();
  const int64_t sample =
      sampled ? std::min(n, std::max(kSamplePerK * k, std::min(kMaxSpreadSample, n / kSamplePerK))) : 0;
  const bool bounded = sampled && sample >= k;
  const int64_t sample_ld = round_up4(sample);
  const int64_t per_query_bytes = (bounded ? sample_ld * 4 + k * 8 : 0) + k * 8 + (lc ? device.clusters * 4 + 4 : 0) +
                                  (sss ? device.pivots * 4 : 0) + std::min(n, kMinChunkRows) * 4;
  std::vector<float> best_keys;
  std::vector<int32_t> best_ids;

  for (int64_t t0 = 0; t0 < nq;) {
    const int64_t t1 = tile_end(scan, t0, nq, per_query_bytes, budget / 2);
    const int64_t slots = t1 - t0;
    std::vector<int64_t> block_queries(static_cast<size_t>(slots));
    std::iota(block_queries.begin(), block_queries.end(), t0);
    // Column chunks of the keys: what is left of the budget, at least kMinChunkRows rows.
    int64_t width = std::clamp<int64_t>(budget / 2 / (slots * 4), std::min(n, kMinChunkRows), n);
    if (width < n) width = std::max<int64_t>(4, width / 4 * 4);
    const int64_t ld = round_up4(width);
    int64_t workspace_bytes = select_workspace_bytes<int32_t>(resources.limits(), slots, width, k);
    if (n % width != 0)
      workspace_bytes =
          std::max(workspace_bytes, select_workspace_bytes<int32_t>(resources.limits(), slots, n % width, k));
    if (bounded)
      workspace_bytes =
          std::max(workspace_bytes, select_workspace_bytes<int32_t>(resources.limits(), slots, sample, k));
    PoolBuffer<char> workspace(pool, workspace_bytes);
    PoolBuffer<float> keys(pool, slots * ld), out_keys(pool, slots * k);
    PoolBuffer<int32_t> out_ids(pool, slots * k);

    ScanArgs args = scan.args();
    args.query_base = t0;
    args.radius = float_infinity();

    // The pruning radius: the k-th distance to a spread sample of the allowed rows.
    PoolBuffer<float> sample_keys, radius_keys;
    PoolBuffer<int32_t> radius_ids;
    if (bounded) {
      sample_keys = PoolBuffer<float>(pool, slots * sample_ld);
      radius_keys = PoolBuffer<float>(pool, slots * k);
      radius_ids = PoolBuffer<int32_t>(pool, slots * k);
      ScanArgs spread = args;
      spread.begin = 0;
      spread.end = sample;
      spread.stride_count = sample;
      spread.keys = sample_keys.get();
      spread.ld = sample_ld;
      scan.launch(spread, block_queries, budget / 4);
      SelectRequest<int32_t> request;
      request.keys = sample_keys.get();
      request.ld = sample_ld;
      request.rows = slots;
      request.cols = sample;
      request.k = k;
      request.out_keys = radius_keys.get();
      request.out_ids = radius_ids.get();
      select_rows(request, resources.limits(), workspace.get(), stream);
      args.radius_at = radius_keys.get() + (k - 1);
      args.radius_stride = k;
    }

    const MethodDistances method_tables = method_distances(scan, args, device, lc, sss, block_queries, pool, budget / 4);
    args.prune = prune;

    // Keys chunk by chunk, each selection continuing from the last.
    for (int64_t c0 = 0; c0 < n; c0 += width) {
      const int64_t c1 = std::min(n, c0 + width);
      ScanArgs chunk = args;
      chunk.begin = c0;
      chunk.end = c1;
      chunk.keys = keys.get();
      chunk.ld = ld;
      scan.launch(chunk, block_queries, budget / 4);
      SelectRequest<int32_t> request;
      request.keys = keys.get();
      request.ld = ld;
      request.rows = slots;
      request.cols = c1 - c0;
      request.k = k;
      request.id_base = c0;
      request.prev_keys = c0 > 0 ? out_keys.get() : nullptr;
      request.prev_ids = c0 > 0 ? out_ids.get() : nullptr;
      request.out_keys = out_keys.get();
      request.out_ids = out_ids.get();
      request.keep_missing_as_sentinel = true;
      select_rows(request, resources.limits(), workspace.get(), stream);
    }

    best_keys.resize(size_t(slots * k));
    best_ids.resize(size_t(slots * k));
    copy_from_device(resources.staging(), resources.device(), best_keys.data(), out_keys.get(),
                     best_keys.size() * sizeof(float), stream);
    copy_from_device(resources.staging(), resources.device(), best_ids.data(), out_ids.get(),
                     best_ids.size() * sizeof(int32_t), stream);
    // Keys of +inf are rows filtered out or pruned (or beyond float's range): missing results.
    for (int64_t i = 0; i < slots * k; ++i) {
      const float key = best_keys[size_t(i)];
      const int32_t id = best_ids[size_t(i)];
      const bool found = id != kNoRow && id >= 0 && key < float_infinity();
      distances[t0 * k + i] = found ? key : float_infinity();
      rows[t0 * k + i] = found ? int64_t(id) : -1;
    }
    t0 = t1;
  }
  session.finish();
}

}  // namespace quiver::gpu
