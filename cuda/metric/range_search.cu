// gpu_metric.h's metric_range_search: brute force, List of Clusters and SSS, one block per query
// (SSS over vectors: a block per tile of queries and rows when the queries are many, sss_batched.h).
//
// Per tile of queries: the method's distances to centres or pivots, then one scan whose hits go to a
// buffer of `capacity` hits a query, which counts on when full. Counts come back to the host (the
// cap is checked there), then the hits are packed densely: gathered from the buffer where they fit,
// found again by a second scan into exactly sized room where they did not (so device memory stays
// within the tile budget whatever the radius: the pass of a large result costs a second scan, not
// memory). L2 hits then take their squared distances as the host computes them (squared_hits.h),
// the caller's units. Each query's hits are sorted by (distance, row) on the device (CUB's segmented
// sort of 64-bit keys, cuda/flat/range_sort.h) and copied straight into the output.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "cpp/backend/gpu_metric.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/core/transfer.h"
#include "cuda/flat/range_sort.h"
#include "cuda/metric/metric_device.h"
#include "cuda/metric/metric_scan.h"
#include "cuda/metric/search_plan.h"
#include "cuda/metric/squared_hits.h"
#include "cuda/metric/sss_batched.h"

namespace quiver::gpu {

namespace {

using namespace metric_space;

// The first scan's buffer holds at least this many hits a query (all of them for small spaces).
constexpr int64_t kMinBufferedHits = 64;
constexpr int kGatherThreads = 256;
constexpr int64_t kHitBytes = int64_t(sizeof(int32_t) + sizeof(float));
// A packed hit's bytes while its group is sorted: row and distance, its sort key in and out, and
// about a key more of the sort's workspace.
constexpr int64_t kPackedHitBytes = kHitBytes + 3 * int64_t(sizeof(uint64_t));

// Block b copies slot first_slot + b's hits from its buffer to dst at segments[b], unless they
// overflowed the buffer (count > capacity: its rerun writes them).
__global__ void gather_hits_kernel(const int32_t* rows, const float* distances, int64_t capacity, int64_t first_slot,
                                   const int64_t* segments, int32_t* dst_rows, float* dst_distances) {
  const int64_t b = blockIdx.x;
  const int64_t from = (first_slot + b) * capacity, to = segments[b], count = segments[b + 1] - to;
  if (count > capacity) return;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    dst_rows[to + i] = rows[from + i];
    dst_distances[to + i] = distances[from + i];
  }
}

// The sort key of a hit: the distance's bits (a distance is >= 0, so they order as the floats do),
// then the row, so that keys sort by (distance, row).
__global__ void hit_keys_kernel(const int32_t* rows, const float* distances, int64_t count, uint64_t* keys) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) keys[i] = (uint64_t(__float_as_uint(distances[i])) << 32) | uint32_t(rows[i]);
}

// Sorted key i back to its row (64-bit) and distance.
__global__ void unpack_hits_kernel(const uint64_t* keys, int64_t count, int64_t* rows, float* distances) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const uint64_t key = keys[i];
  rows[i] = int64_t(uint32_t(key));
  distances[i] = __uint_as_float(uint32_t(key >> 32));
}

template <typename T>
PoolBuffer<T> upload(MetricScan& scan, const std::vector<T>& host) {
  PoolBuffer<T> buffer(scan.resources.pool(), int64_t(host.size()));
  if (!host.empty())
    copy_to_device(scan.resources.staging(), scan.resources.device(), buffer.get(), host.data(),
                   host.size() * sizeof(T), scan.stream);
  return buffer;
}

}  // namespace

MetricHits metric_range_search(Resources& resources, const MetricDevice& device, MetricMethod method,
                               const Objects& queries, float radius, const RowFilter& filter,
                               int64_t max_hits_per_query) {
  DeviceScope device_scope(resources.device());
  require(device.device == resources.device(), "the metric space lives on device ", device.device,
          ", the resources on ", resources.device());
  check_metric_objects("queries", queries, device.dim);
  require(radius >= 0.0f, "radius = ", radius, " is not a distance (negative or NaN)");
  require(max_hits_per_query >= 0, "max_hits_per_query = ", max_hits_per_query, " is negative (0: no limit)");
  const Prune prune = prune_of(device, method);
  const int64_t nq = queries.n, n = device.rows;
  MetricHits out;
  out.lims.assign(size_t(nq + 1), 0);
  out.evaluations.assign(size_t(nq), 0);
  if (nq == 0 || n == 0) return out;

  Session session(resources);
  MetricScan scan(resources, device, queries, filter);
  DevicePool& pool = resources.pool();
  cudaStream_t stream = scan.stream;
  const int64_t budget = resources.tile_bytes();
  const bool lc = prune == Prune::list_of_clusters;
  const bool sss = prune == Prune::sss && device.pivots > 0;
  const int64_t fixed_evaluations = lc ? device.clusters : prune == Prune::sss ? device.pivots : 0;
  const int64_t per_query_bytes = (lc ? device.clusters * 4 + 4 : 0) + (sss ? device.pivots * 4 : 0) + 16;
  const bool batched = sss && sss_batched_applies(device, prune, nq);
  const int64_t tile_queries = batched ? kBatchedTileQueries : kMaxTileQueries;
  const bool squared = device.metric == Metric::l2;
  // One scan of the queries `scanned` (a tile's, or its reruns) into the hits output `a` describes.
  const auto launch_scan = [&](const ScanArgs& a, const std::vector<int64_t>& scanned) {
    if (batched) sss_batched_range(a, int64_t(scanned.size()), pool, stream);
    else scan.launch(a, scanned, budget / 4);
  };

  for (int64_t t0 = 0; t0 < nq;) {
    const int64_t t1 = tile_end(scan, t0, nq, per_query_bytes, budget / 2, tile_queries);
    const int64_t slots = t1 - t0;
    std::vector<int64_t> block_queries(static_cast<size_t>(slots));
    std::iota(block_queries.begin(), block_queries.end(), t0);
    ScanArgs args = scan.args();
    args.query_base = t0;
    args.radius = radius;

    const MethodDistances method_tables = method_distances(scan, args, device, lc, sss, block_queries, pool, budget / 4);
    args.prune = prune;
    args.begin = 0;
    args.end = n;

    // The scan, into buffers of `capacity` hits.
    const int64_t capacity = std::clamp<int64_t>(budget / 4 / (slots * kHitBytes), std::min(n, kMinBufferedHits), n);
    PoolBuffer<int32_t> buffered_rows(pool, slots * capacity);
    PoolBuffer<float> buffered_distances(pool, slots * capacity);
    // Per slot, the hits (slots 0 .. slots-1) and then the distances computed: one copy back.
    PoolBuffer<unsigned long long> counts(pool, 2 * slots);
    QV_CUDA_CHECK(cudaMemsetAsync(counts.get(), 0, size_t(2 * slots) * sizeof(unsigned long long), stream));
    ScanArgs first = args;
    first.hit_rows = buffered_rows.get();
    first.hit_distances = buffered_distances.get();
    first.hit_capacity = capacity;
    first.hit_count = counts.get();
    first.evaluations = counts.get() + slots;
    launch_scan(first, block_queries);
    std::vector<unsigned long long> count(static_cast<size_t>(2 * slots));
    copy_from_device(resources.staging(), resources.device(), count.data(), counts.get(),
                     count.size() * sizeof(unsigned long long), stream);
    for (int64_t s = 0; s < slots; ++s) {
      if (max_hits_per_query > 0 && count[size_t(s)] > static_cast<unsigned long long>(max_hits_per_query))
        fail(Status::too_many_results, "range search: query ", t0 + s, " has ", count[size_t(s)],
             " hits within radius ", radius, ", more than max_hits_per_query = ", max_hits_per_query);
      out.evaluations[size_t(t0 + s)] = int64_t(count[size_t(slots + s)]) + fixed_evaluations;
    }
    const unsigned long long tile_hits = std::accumulate(count.begin(), count.begin() + slots, 0ull);
    out.rows.reserve(out.rows.size() + size_t(tile_hits));
    out.distances.reserve(out.distances.size() + size_t(tile_hits));

    // The hits, packed densely, a group of queries at a time.
    for (int64_t g0 = 0; g0 < slots;) {
      int64_t g1 = g0, total = 0;
      while (g1 < slots && (g1 == g0 || (total + int64_t(count[size_t(g1)])) * kPackedHitBytes <= budget / 2))
        total += int64_t(count[size_t(g1++)]);
      // Slot s's hits go to segments[s - g0] .. segments[s - g0 + 1] of the group's.
      std::vector<int32_t> rerun_slots;
      std::vector<int64_t> segments(static_cast<size_t>(g1 - g0 + 1)), rerun_offsets, rerun_counts, rerun_queries;
      for (int64_t s = g0, at = 0; s < g1; ++s) {
        const int64_t c = int64_t(count[size_t(s)]);
        segments[size_t(s - g0)] = at;
        if (c > capacity) {
          rerun_slots.push_back(int32_t(s));
          rerun_counts.push_back(c);
          rerun_offsets.push_back(at);
          rerun_queries.push_back(t0 + s);
        }
        at += c;
      }
      segments.back() = total;
      if (total == 0) {
        for (int64_t s = g0; s < g1; ++s) out.lims[size_t(t0 + s + 1)] = out.lims[size_t(t0 + s)];
        g0 = g1;
        continue;
      }
      PoolBuffer<int32_t> packed_rows(pool, total);
      PoolBuffer<float> packed_distances(pool, total);
      PoolBuffer<int32_t> rerun_slot_buffer;
      PoolBuffer<int64_t> rerun_offset_buffer, rerun_count_buffer;
      PoolBuffer<unsigned long long> rerun_hit_counts;
      PoolBuffer<int64_t> segment_buffer = upload(scan, segments);
      gather_hits_kernel<<<unsigned(g1 - g0), kGatherThreads, 0, stream>>>(
          buffered_rows.get(), buffered_distances.get(), capacity, g0, segment_buffer.get(), packed_rows.get(),
          packed_distances.get());
      QV_LAUNCH_CHECK("metric gather_hits_kernel");
      if (!rerun_slots.empty()) {
        rerun_slot_buffer = upload(scan, rerun_slots);
        rerun_offset_buffer = upload(scan, rerun_offsets);
        rerun_count_buffer = upload(scan, rerun_counts);
        rerun_hit_counts = PoolBuffer<unsigned long long>(pool, int64_t(rerun_slots.size()));
        QV_CUDA_CHECK(cudaMemsetAsync(rerun_hit_counts.get(), 0, rerun_slots.size() * sizeof(unsigned long long),
                                      stream));
        ScanArgs again = args;
        again.block_slot = rerun_slot_buffer.get();
        again.hit_rows = packed_rows.get();
        again.hit_distances = packed_distances.get();
        again.hit_offset = rerun_offset_buffer.get();
        again.hit_capacities = rerun_count_buffer.get();
        again.hit_capacity = 0;
        again.hit_count = rerun_hit_counts.get();
        again.evaluations = nullptr;
        launch_scan(again, rerun_queries);
      }
      // L2: the squared distances in place of the true ones (the caller's units, the sort's keys).
      if (squared)
        squared_l2_of_hits(args.query_vectors, t0 + g0, args.vectors, device.dim, packed_rows.get(),
                           segment_buffer.get(), g1 - g0, packed_distances.get(), stream);
      // Each query's hits sorted by (distance, row) on the device.
      PoolBuffer<uint64_t> keys(pool, total), sorted(pool, total);
      const size_t sort_bytes = range_sort_workspace_bytes(total, g1 - g0);
      PoolBuffer<char> sort_workspace(pool, std::max<int64_t>(int64_t(sort_bytes), 1));
      hit_keys_kernel<<<unsigned((total + kGatherThreads - 1) / kGatherThreads), kGatherThreads, 0, stream>>>(
          packed_rows.get(), packed_distances.get(), total, keys.get());
      QV_LAUNCH_CHECK("metric hit_keys_kernel");
      range_sort(sort_workspace.get(), sort_bytes, keys.get(), sorted.get(), total, g1 - g0, segment_buffer.get(),
                 stream);
      // The sorted hits back to 64-bit rows (over the keys, read by now) and distances, copied into
      // the output where they go.
      int64_t* unpacked_rows = reinterpret_cast<int64_t*>(keys.get());
      unpack_hits_kernel<<<unsigned((total + kGatherThreads - 1) / kGatherThreads), kGatherThreads, 0, stream>>>(
          sorted.get(), total, unpacked_rows, packed_distances.get());
      QV_LAUNCH_CHECK("metric unpack_hits_kernel");
      const size_t at = out.rows.size();
      out.rows.resize(at + size_t(total));
      out.distances.resize(at + size_t(total));
      copy_from_device(resources.staging(), resources.device(), out.rows.data() + at, unpacked_rows,
                       size_t(total) * sizeof(int64_t), stream);
      copy_from_device(resources.staging(), resources.device(), out.distances.data() + at, packed_distances.get(),
                       size_t(total) * sizeof(float), stream);
      for (int64_t s = g0; s < g1; ++s)
        out.lims[size_t(t0 + s + 1)] = out.lims[size_t(t0 + s)] + int64_t(count[size_t(s)]);
      g0 = g1;
    }
    t0 = t1;
  }
  session.finish();
  return out;
}

}  // namespace quiver::gpu
