// Exact range search on the GPU (cpp/backend/gpu_range.h).
//
// The queries go in blocks (at most kMaxBlockQueries; with several blocks, a first small one whose
// hits per query size the buffers of the rest). A block is searched tile by tile as the exact k-NN
// does it: a GEMM writes alpha <x, y> for the block against base rows [c0, c0 + columns), and one
// kernel reads the tile once (range_kernels.h): it keeps the rows whose approximate key is within
// the query's threshold (the radius plus certify.h's bound on the GEMM's error), computes their
// exact float32 values and appends the hits (query, row, value) to the block's hit buffer with one
// atomic per block of 2048 columns, counting them per query. Tiles alternate between the two compute
// streams and two tile buffers: the GEMM of one tile overlaps the filter of the previous one.
//
// After the block's last tile the host reads the per-query counts (the limit on results is checked
// there), then on the copy stream: the hits become sort keys at their query's offset (scatter), a
// segmented sort orders each query's (distance, row), and a decode writes rows and distances, which
// are copied into the results. The next block's search is queued before that copy, so it runs while
// the host receives the previous block's hits; the two blocks use the two hit buffers.
//
// With TF32 products, dim a multiple of 4 up to 128, one kernel per block does both steps
// (range_fused.h): the products are filtered where they are computed, and no tile is written.
//
// Memory stays bounded whatever the radius: a block whose hits overflow its buffer (the filter keeps
// counting what it drops) is searched again once the buffer has grown to its now known count, or,
// when the device cannot hold that many, in parts of consecutive queries that fit; the sort runs in
// parts of queries too when its keys do not fit. Only a single query with more hits than the device
// can hold fails (out_of_device_memory).
//
// The GEMM: TF32 from kMinTf32Queries queries on (SGEMM below, where it reads the base as fast), but
// SGEMM also for L2 data whose TF32 error bound is wide next to the radius (data far from the
// origin, tiny radii): candidates within the bound are checked exactly, so a wide bound costs time,
// never results.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "cpp/backend/gpu_range.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/flat/certify.h"
#include "cuda/flat/compute_modes.h"
#include "cuda/flat/kernels.h"
#include "cuda/flat/range_fused.h"
#include "cuda/flat/range_kernels.h"
#include "cuda/flat/range_search.h"
#include "cuda/flat/range_sort.h"

namespace quiver::gpu {

namespace {

// Rows of the base are numbered in int32 on the device.
constexpr int64_t kMaxRows = std::numeric_limits<int32_t>::max() - 1;
// Tile widths are multiples of this (each tile row 16-byte aligned, a GEMM edge on cuBLAS's blocking).
constexpr int64_t kColumnAlign = 128;
// cuBLAS takes int dimensions.
constexpr int64_t kMaxTileColumns = int64_t(1) << 30;
// Queries per block: large enough for efficient GEMMs, small enough that a 10 000-query search has
// several blocks, the copy of one block's hits to the host overlapping the search of the next.
constexpr int64_t kMaxBlockQueries = 2048;
// The first of several blocks: its hits per query size the hit buffers of the others.
constexpr int64_t kProbeQueries = 256;
// Below this many queries SGEMM reads the base about as fast as TF32 (as in knn.cu).
constexpr int64_t kMinTf32Queries = 32;
// L2: a query's TF32 band is wide when its error bound exceeds this share of the radius; SGEMM runs
// instead when more than 1 / kWideShare of the queries are wide.
constexpr double kBandFraction = 1.0 / 32;
constexpr int64_t kWideShare = 4;
// Hit buffer entries: at first a 32nd of a tile within these bounds, then grown from the hits seen,
// with a quarter more as headroom.
constexpr int64_t kMinHitCapacity = 4096;
constexpr int64_t kMaxInitialHits = int64_t(1) << 23;
constexpr double kHeadroom = 1.25;

constexpr int kZeroedEvent = 0;  // a block's hit counters are zeroed (stream 0)
constexpr int kDoneEvent = 1;    // and 2: a block's tiles on stream 0 / 1 are filtered
static_assert(kDoneEvent + 1 < Resources::kEvents, "Resources::kEvents");

thread_local RangeCallStats call_stats;
thread_local int64_t hit_limit = 0, sort_limit = 0;  // set_range_buffer_limits_for_testing
thread_local bool fused_allowed = true;                 // set_range_fused_for_testing

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

template <typename T>
PoolBuffer<T> limited_buffer(DevicePool& pool, int64_t count, int64_t limit) {
  if (limit > 0 && count > limit)
    fail(Status::out_of_device_memory, "GPU range search: ", count, " entries exceed the testing limit of ", limit);
  return PoolBuffer<T>(pool, count);
}

// The hits of one block (range_kernels.h's RangeHitBuffer), and its counters (1 + block queries).
struct HitBuffers {
  PoolBuffer<unsigned long long> tally;
  PoolBuffer<int32_t> query, row;
  PoolBuffer<float> value;
  int64_t capacity = 0;

  void reset() {
    query.reset();
    row.reset();
    value.reset();
    capacity = 0;
  }
  // Replaces the (idle) entries by `count`; left empty when that throws.
  void allocate(DevicePool& pool, int64_t count) {
    reset();
    try {
      query = limited_buffer<int32_t>(pool, count, hit_limit);
      row = limited_buffer<int32_t>(pool, count, hit_limit);
      value = limited_buffer<float>(pool, count, hit_limit);
    } catch (...) {
      reset();
      throw;
    }
    capacity = count;
  }
};

// The sort's keys (in: scattered, out: sorted) and the decoded distances; the decoded rows go to
// `in`, free once sorted.
struct SortBuffers {
  PoolBuffer<uint64_t> in, out;
  PoolBuffer<float> distances;
  int64_t capacity = 0;

  void reset() {
    in.reset();
    out.reset();
    distances.reset();
    capacity = 0;
  }
  void allocate(DevicePool& pool, int64_t count) {
    reset();
    try {
      in = limited_buffer<uint64_t>(pool, count, sort_limit);
      out = limited_buffer<uint64_t>(pool, count, sort_limit);
      distances = limited_buffer<float>(pool, count, sort_limit);
    } catch (...) {
      reset();
      throw;
    }
    capacity = count;
  }
};

template <typename Buffers>
bool try_allocate(Buffers& b, DevicePool& pool, int64_t count) {
  try {
    b.allocate(pool, count);
    return true;
  } catch (const Error& e) {
    if (e.status() != Status::out_of_device_memory) throw;
    return false;
  }
}

// Grows idle buffers to `want` entries or, when the device cannot hold that many, to the most it
// can of want / 2, want / 4, ... down to `need`, if that is more than they had; else they are given
// back what they had (the caller then works in parts).
template <typename Buffers>
void grow(Buffers& b, DevicePool& pool, int64_t want, int64_t need) {
  const int64_t old = b.capacity;
  for (int64_t count = want; count > old; count = std::max(need, count / 2)) {
    if (try_allocate(b, pool, count)) return;
    if (count <= need) break;
  }
  if (b.capacity < old) b.allocate(pool, old);
}

// Queries [q0, q0 + rows); counts: their hits, once a search has found them.
struct Block {
  int64_t q0 = 0, rows = 0;
  std::vector<unsigned long long> counts;
};

int64_t sum_of(const std::vector<unsigned long long>& counts) {
  return static_cast<int64_t>(std::accumulate(counts.begin(), counts.end(), 0ull));
}

// Consecutive parts of a block whose hits are at most `capacity` each (every query's are).
std::vector<Block> split_block(const Block& b, int64_t capacity) {
  std::vector<Block> parts;
  int64_t start = 0, items = 0;
  auto cut = [&](int64_t end) {
    Block part;
    part.q0 = b.q0 + start;
    part.rows = end - start;
    part.counts.assign(b.counts.begin() + start, b.counts.begin() + end);
    parts.push_back(std::move(part));
  };
  for (int64_t r = 0; r < b.rows; ++r) {
    const int64_t c = static_cast<int64_t>(b.counts[size_t(r)]);
    if (r > start && items + c > capacity) {
      cut(r);
      start = r;
      items = 0;
    }
    items += c;
  }
  cut(b.rows);
  return parts;
}

}  // namespace

RangeCallStats last_range_call_stats() { return call_stats; }

void set_range_buffer_limits_for_testing(int64_t hit_entries, int64_t sort_entries) {
  hit_limit = std::max<int64_t>(0, hit_entries);
  sort_limit = std::max<int64_t>(0, sort_entries);
}

void set_range_fused_for_testing(bool allow) { fused_allowed = allow; }

RangeHits range_search(Resources& resources, Metric metric, const float* base, const float* base_norms, int64_t n,
                       int64_t dim, const float* queries, int64_t nq, float radius, const RowFilter& filter,
                       int64_t max_results) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  require(is_valid_metric(static_cast<int32_t>(metric)), "metric: ", static_cast<int32_t>(metric),
          " is not L2, inner product or cosine");
  require(dim >= 1, "dim = ", dim, " is not positive");
  require(n >= 0, "n = ", n, " is negative");
  require(nq >= 0, "nq = ", nq, " is negative");
  require(!std::isnan(radius), "radius is NaN");
  require(n == 0 || base != nullptr, "base is null");
  require(nq == 0 || queries != nullptr, "queries is null");
  require(filter.nbits >= 0, "filter nbits = ", filter.nbits, " is negative");
  require(max_results >= 0, "max_results = ", max_results, " is negative");
  if (n > kMaxRows) fail(Status::unsupported, "the GPU range search takes at most ", kMaxRows, " rows (n = ", n, ")");
  call_stats = RangeCallStats{};

  RangeHits out;
  out.lims.assign(size_t(nq + 1), 0);
  // Room for `count` results, grown by half at least so that the results so far are copied few
  // times. The vectors' memory is result_memory.h's: a block the last search's results freed is
  // taken again, already faulted in, and resize leaves the entries to the copies below.
  auto reserve_results = [&](size_t count) {
    if (out.rows.capacity() >= count) return;
    count = std::max(count, out.rows.capacity() + out.rows.capacity() / 2);
    out.rows.reserve(count);
    out.distances.reserve(count);
  };
  const bool l2 = metric == Metric::l2;
  // Squared distances are never negative: nothing to find.
  if (nq == 0 || n == 0 || (l2 && radius < 0)) return out;

  Session session(resources);
  const int device = resources.device();
  DevicePool& pool = resources.pool();
  HostStaging& staging = resources.staging();
  cudaStream_t s0 = resources.stream(0), s1 = resources.stream(1);
  cudaStream_t sc = resources.stream(Resources::kCopyStream);

  // ---- inputs on the device (stream 0) ----
  PoolBuffer<float> base_copy, norms_copy, query_copy;
  PoolBuffer<uint8_t> filter_copy;
  const float* y = base;
  if (memory_kind(base, device) != MemoryKind::device) {
    base_copy = PoolBuffer<float>(pool, n * dim);
    copy_to_device(staging, device, base_copy.get(), base, size_t(n * dim) * sizeof(float), s0);
    y = base_copy.get();
  }
  const float* y_norms = base_norms;
  if (base_norms == nullptr || memory_kind(base_norms, device) != MemoryKind::device) {
    norms_copy = PoolBuffer<float>(pool, n);
    if (base_norms != nullptr) {
      copy_to_device(staging, device, norms_copy.get(), base_norms, size_t(n) * sizeof(float), s0);
    } else {
      launch_row_norms(y, n, dim, norms_copy.get(), s0);
    }
    y_norms = norms_copy.get();
  }
  const float* x = queries;
  if (memory_kind(queries, device) != MemoryKind::device) {
    query_copy = PoolBuffer<float>(pool, nq * dim);
    copy_to_device(staging, device, query_copy.get(), queries, size_t(nq * dim) * sizeof(float), s0);
    x = query_copy.get();
  }
  if (filter.bits != nullptr) {
    const int64_t bytes = (filter.nbits + 7) / 8;
    filter_copy = PoolBuffer<uint8_t>(pool, std::max<int64_t>(1, bytes));
    if (bytes > 0) copy_to_device(staging, device, filter_copy.get(), filter.bits, size_t(bytes), s0);
  }

  // ---- per-query thresholds on the approximate keys (certify.h's bound) ----
  bool tf32 = nq >= kMinTf32Queries;
  CertifyModel model = certify_model(tf32, l2, dim);
  PoolBuffer<double> query_stats(pool, 2 * nq);
  PoolBuffer<unsigned> base_stats(pool, kBaseStatsCount + 1);  // + the count of wide queries
  unsigned* wide = base_stats.get() + kBaseStatsCount;
  QV_CUDA_CHECK(cudaMemsetAsync(base_stats.get(), 0, (kBaseStatsCount + 1) * sizeof(unsigned), s0));
  launch_query_stats(x, nq, dim, query_stats.get(), s0);
  // Rounded GEMM inputs need the rows' residuals; otherwise the largest norm is all the bound needs.
  if (model.rounded_inputs) {
    launch_base_stats(y, n, dim, base_stats.get(), s0);
  } else {
    launch_norms_max(y_norms, n, static_cast<float>(1 + 2 * model.norms), base_stats.get(), s0);
  }
  PoolBuffer<float> thresholds(pool, nq);
  const bool check_band = l2 && tf32;
  launch_range_thresholds(model, radius, query_stats.get(), base_stats.get(), nq, kBandFraction, thresholds.get(),
                          check_band ? wide : nullptr, s0);
  if (check_band) {
    unsigned wide_count = 0;
    QV_CUDA_CHECK(cudaMemcpyAsync(&wide_count, wide, sizeof wide_count, cudaMemcpyDeviceToHost, s0));
    QV_CUDA_CHECK(cudaStreamSynchronize(s0));
    if (int64_t(wide_count) * kWideShare > nq) {
      tf32 = false;
      model = certify_model(false, l2, dim);
      launch_range_thresholds(model, radius, query_stats.get(), base_stats.get(), nq, kBandFraction, thresholds.get(),
                              nullptr, s0);
    }
  }
  call_stats.tf32 = tf32;
  const ComputeMode gemm_mode = tf32 ? ComputeMode::tf32 : ComputeMode::fp32;
  const float alpha = l2 ? -2.f : -1.f;

  // ---- blocks and buffers ----
  const int64_t tile_floats = resources.tile_bytes() / int64_t(sizeof(float));
  const int64_t max_rows = std::clamp<int64_t>(tile_floats / kColumnAlign, 1, kMaxBlockQueries);
  std::deque<Block> pending;
  if (nq <= max_rows) {
    pending.push_back(Block{0, nq, {}});
  } else {
    const int64_t first = std::min(kProbeQueries, max_rows);
    pending.push_back(Block{0, first, {}});
    const int64_t rest = nq - first;
    const int64_t count = (rest + max_rows - 1) / max_rows;
    const int64_t per = (rest + count - 1) / count;
    for (int64_t q0 = first; q0 < nq; q0 += per) pending.push_back(Block{q0, std::min(per, nq - q0), {}});
  }
  int64_t block_rows = 0;
  for (const Block& b : pending) block_rows = std::max(block_rows, b.rows);
  // Every block (and part of one) has at most block_rows queries: its tile, rows x columns, fits
  // both min(tile_floats, block_rows * n4) floats (block_rows <= tile_floats / kColumnAlign).
  const int64_t n4 = round_up(n, 4);
  auto columns_for = [&](int64_t rows) {
    return std::min({n4, kMaxTileColumns, std::max(kColumnAlign, tile_floats / rows / kColumnAlign * kColumnAlign)});
  };
  // TF32 in one kernel where it fits (range_fused.h): no distance tiles.
  const bool fused = fused_allowed && tf32 && range_fused_fits(resources.limits(), dim, n) && aligned16(y) &&
                     aligned16(x) && (!l2 || aligned16(y_norms));
  call_stats.fused = fused;
  const int64_t tile_entries = fused ? 0 : std::min(tile_floats, block_rows * n4);
  PoolBuffer<float> tiles[2];
  if (!fused) {
    for (PoolBuffer<float>& tile : tiles) tile = PoolBuffer<float>(pool, tile_entries);
  }
  HitBuffers hits[2];
  for (HitBuffers& h : hits) h.tally = PoolBuffer<unsigned long long>(pool, 1 + block_rows);
  SortBuffers sort;
  PoolBuffer<int64_t> offsets_device(pool, block_rows + 1);
  int64_t hit_target = std::min(std::clamp(tile_floats / 32, kMinHitCapacity, kMaxInitialHits), block_rows * n);
  const uint8_t* filter_bits = filter.bits != nullptr ? filter_copy.get() : nullptr;
  const int sm_count = resources.limits().sm_count;

  // Queues the search of block b into hit buffer h: counters zeroed, then GEMM + filter per tile,
  // alternating streams; kDoneEvent (+1) mark the end on each stream.
  auto search = [&](const Block& b, HitBuffers& h) {
    QV_CUDA_CHECK(cudaMemsetAsync(h.tally.get(), 0, size_t(1 + b.rows) * sizeof(unsigned long long), s0));
    QV_CUDA_CHECK(cudaEventRecord(resources.event(kZeroedEvent), s0));
    QV_CUDA_CHECK(cudaStreamWaitEvent(s1, resources.event(kZeroedEvent), 0));
    const int64_t columns = columns_for(b.rows);
    RangeHitBuffer target;
    target.tally = h.tally.get();
    target.query = h.query.get();
    target.row = h.row.get();
    target.value = h.value.get();
    target.capacity = h.capacity;
    if (fused) {
      RangeFusedSearch f;
      f.queries = x + b.q0 * dim;
      f.rows = b.rows;
      f.base = y;
      f.norms = y_norms;
      f.n = n;
      f.dim = dim;
      f.thresholds = thresholds.get() + b.q0;
      f.filter = filter_bits;
      f.filter_bits = filter.nbits;
      f.radius = radius;
      f.l2 = l2;
      launch_range_fused(resources.limits(), f, target, s0);
    }
    int64_t step = 0;
    for (int64_t c0 = 0; !fused && c0 < n; c0 += columns, ++step) {
      const int slot = static_cast<int>(step & 1);
      const int64_t cols = std::min(columns, n - c0);
      // The tile buffer is free: the filter that last read it ran on this same stream.
      distance_gemm(resources.blas(slot), gemm_mode, cols, b.rows, dim, alpha, y + c0 * dim, dim, x + b.q0 * dim, dim,
                    tiles[slot].get(), columns);
      RangeTile t;
      t.tile = tiles[slot].get();
      t.ld = columns;
      t.rows = b.rows;
      t.cols = cols;
      t.c0 = c0;
      t.bias = l2 ? y_norms + c0 : nullptr;
      t.thresholds = thresholds.get() + b.q0;
      t.filter = filter_bits;
      t.filter_bits = filter.nbits;
      t.base = y;
      t.queries = x + b.q0 * dim;
      t.dim = dim;
      t.radius = radius;
      t.l2 = l2;
      launch_range_filter(t, target, sm_count, resources.stream(slot));
    }
    QV_CUDA_CHECK(cudaEventRecord(resources.event(kDoneEvent), s0));
    QV_CUDA_CHECK(cudaEventRecord(resources.event(kDoneEvent + 1), s1));
    ++call_stats.searches;
  };

  struct Active {
    Block block;
    int parity = 0;
  };
  int parity = 0;  // the hit buffer of the next search
  // Takes the next pending block and queues its search in the other hit buffer, which is idle: its
  // last block's hits are on the host. A block whose hits are known and more than the device can
  // hold is cut into parts that fit (the rest go back to the front of the queue).
  auto start_next = [&]() {
    Block b = std::move(pending.front());
    pending.pop_front();
    const int p = parity;
    parity ^= 1;
    HitBuffers& h = hits[p];
    const int64_t known = b.counts.empty() ? -1 : sum_of(b.counts);
    grow(h, pool, std::max(hit_target, known), known >= 0 ? known : std::min(hit_target, kMinHitCapacity));
    if (known > h.capacity) {
      const auto largest = std::max_element(b.counts.begin(), b.counts.end());
      const int64_t most = static_cast<int64_t>(*largest);
      if (most > h.capacity) grow(h, pool, most, most);
      if (most > h.capacity)
        fail(Status::out_of_device_memory, "GPU range search: query ", b.q0 + (largest - b.counts.begin()), " has ",
             most, " results, more than the device can hold");
      std::vector<Block> parts = split_block(b, h.capacity);
      for (size_t i = parts.size(); i-- > 1;) pending.push_front(std::move(parts[i]));
      b = std::move(parts[0]);
    }
    search(b, h);
    call_stats.hit_capacity = std::max(call_stats.hit_capacity, h.capacity);
    return Active{std::move(b), p};
  };

  // Sorts block a's hits (total, counts known) into per-query order and appends them to the results,
  // in parts of consecutive queries when the sort's buffers cannot hold them all; `next` is called
  // once the first part is queued (or at once when there is nothing to sort), before any copy.
  int64_t results = 0;
  auto assemble = [&](const Active& a, int64_t total, const std::function<void()>& next) {
    bool next_started = false;
    auto begin_next = [&] {
      if (!next_started) {
        next_started = true;
        next();
      }
    };
    const Block& b = a.block;
    HitBuffers& h = hits[a.parity];
    if (total == 0) {
      begin_next();
      return;
    }
    // Idle: the last block's sorted hits are on the host.
    const int64_t most = static_cast<int64_t>(*std::max_element(b.counts.begin(), b.counts.end()));
    grow(sort, pool, std::max(total, sort.capacity), most);
    if (most > sort.capacity)
      fail(Status::out_of_device_memory, "GPU range search: a query's ", most,
           " results are more than the device can sort");
    unsigned long long* cursors = h.tally.get() + 1;
    QV_CUDA_CHECK(cudaMemsetAsync(cursors, 0, size_t(b.rows) * sizeof(unsigned long long), sc));
    std::vector<int64_t> offsets(size_t(b.rows + 1));
    for (int64_t qa = 0; qa < b.rows;) {
      int64_t qb = qa, items = 0;
      while (qb < b.rows && items + static_cast<int64_t>(b.counts[size_t(qb)]) <= sort.capacity)
        items += static_cast<int64_t>(b.counts[size_t(qb++)]);
      if (items > 0) {
        offsets[0] = 0;
        for (int64_t q = qa; q < qb; ++q)
          offsets[size_t(q - qa + 1)] = offsets[size_t(q - qa)] + static_cast<int64_t>(b.counts[size_t(q)]);
        copy_to_device(staging, device, offsets_device.get(), offsets.data(), size_t(qb - qa + 1) * sizeof(int64_t),
                       sc);
        launch_range_scatter(h.query.get(), h.row.get(), h.value.get(), total, static_cast<int32_t>(qa),
                             static_cast<int32_t>(qb), offsets_device.get(), cursors + qa, l2, sort.in.get(), sc);
        const size_t workspace_bytes = range_sort_workspace_bytes(items, qb - qa);
        PoolBuffer<char> workspace(pool, static_cast<int64_t>(std::max<size_t>(workspace_bytes, 1)));
        range_sort(workspace.get(), workspace_bytes, sort.in.get(), sort.out.get(), items, qb - qa,
                   offsets_device.get(), sc);
        int64_t* rows_device = reinterpret_cast<int64_t*>(sort.in.get());  // the sort's input is free
        launch_range_decode(sort.out.get(), items, l2, rows_device, sort.distances.get(), sc);
        begin_next();
        const auto copy_start = std::chrono::steady_clock::now();
        reserve_results(size_t(results + items));
        out.rows.resize(size_t(results + items));
        out.distances.resize(size_t(results + items));
        copy_from_device(staging, device, out.rows.data() + results, rows_device, size_t(items) * sizeof(int64_t), sc);
        copy_from_device(staging, device, out.distances.data() + results, sort.distances.get(),
                         size_t(items) * sizeof(float), sc);
        results += items;
        call_stats.results_ms += ms_since(copy_start);
        ++call_stats.sorts;
      }
      qa = qb;
    }
    begin_next();
  };

  // ---- the blocks, in query order ----
  int64_t queries_done = 0, hits_done = 0;
  std::vector<unsigned long long> tally;
  Active current = start_next();
  bool have_current = true;
  while (have_current) {
    have_current = false;
    Active a = std::move(current);
    const Block& b = a.block;
    HitBuffers& h = hits[a.parity];
    // The block's counters, after every tile of it is filtered.
    QV_CUDA_CHECK(cudaStreamWaitEvent(sc, resources.event(kDoneEvent), 0));
    QV_CUDA_CHECK(cudaStreamWaitEvent(sc, resources.event(kDoneEvent + 1), 0));
    tally.resize(size_t(1 + b.rows));
    const auto wait_start = std::chrono::steady_clock::now();
    copy_from_device(staging, device, tally.data(), h.tally.get(), tally.size() * sizeof(unsigned long long), sc);
    call_stats.wait_ms += ms_since(wait_start);
    const int64_t total = static_cast<int64_t>(tally[0]);
    if (max_results > 0) {
      for (int64_t r = 0; r < b.rows; ++r)
        if (tally[size_t(1 + r)] > static_cast<unsigned long long>(max_results))
          fail(Status::too_many_results, "range search: query ", b.q0 + r, " has ", tally[size_t(1 + r)],
               " results, more than max_range_results = ", max_results);
    }
    Block counted{b.q0, b.rows, std::vector<unsigned long long>(tally.begin() + 1, tally.end())};
    if (total > h.capacity) {
      // Dropped hits: search the block again, its counts known, in a buffer that holds them.
      ++call_stats.overflows;
      hit_target = std::max(hit_target, static_cast<int64_t>(double(total) * kHeadroom));
      pending.push_front(std::move(counted));
      current = start_next();
      have_current = true;
      continue;
    }
    for (int64_t r = 0; r < b.rows; ++r)
      out.lims[size_t(b.q0 + r + 1)] = out.lims[size_t(b.q0 + r)] + static_cast<int64_t>(counted.counts[size_t(r)]);
    // The blocks to come get buffers for the hits per query seen so far, and the results room.
    queries_done += b.rows;
    hits_done += total;
    const double per_query = double(hits_done) / double(queries_done);
    if (!pending.empty()) {
      const int64_t rows = pending.front().rows;
      const auto estimate = static_cast<int64_t>(per_query * double(rows) * kHeadroom) + kMinHitCapacity;
      hit_target = std::max(hit_target, std::min(estimate, rows * n));
      const auto expected = static_cast<size_t>(double(hits_done) + per_query * double(nq - queries_done) * kHeadroom);
      reserve_results(expected);
    }
    a.block.counts = std::move(counted.counts);
    assemble(a, total, [&] {
      if (!pending.empty()) {
        current = start_next();
        have_current = true;
      }
    });
  }
  session.finish();
  return out;
}

}  // namespace quiver::gpu
