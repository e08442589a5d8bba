// metric_scan.h: the scan kernel, List of Clusters' stop kernel, and the host side of a launch.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "cpp/core/error.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/core/transfer.h"
#include "cuda/metric/edit_distance.cuh"
#include "cuda/metric/metric_scan.h"
#include "cuda/metric/scan_tests.cuh"
#include "cuda/metric/vector_distance.cuh"

namespace quiver::gpu::metric_space {

namespace {

constexpr int64_t kMinCandidatesPerSplit = int64_t(kScanThreads) * 4;
constexpr int64_t kMaxSplits = 65535;  // gridDim.y
constexpr int kDefaultSharedBytes = 48 * 1024;
// Static shared memory a scan kernel declares beside the dynamic (the pruned one's queues and
// cluster lists: about 4.2 KiB), which counts towards the default limit too.
constexpr int kStaticSharedBytes = 8 * 1024;
constexpr int kMaxSharedBytes = int(std::max(kSharedPatternWords * 256 * 8, kSharedQueryFloats * 4) + kSharedPivots * 4);
// Relative error of a float distance of dim components, in units of 2^-24, and the slack's margin.
constexpr float kSlackUnit = 0x1p-24f;
constexpr float kSlackMargin = 8.0f;

__device__ __forceinline__ float infinity() { return __int_as_float(0x7f800000); }

__device__ __forceinline__ int32_t row_at(const ScanArgs& a, int64_t i) {
  if (a.row_list != nullptr) return a.row_list[i];
  if (a.stride_count > 0) return int32_t(i * a.rows / a.stride_count);
  return int32_t(i);
}

// Appends (row, d) to block o's hits where `hit`. Every lane of the warp calls it; one atomic a warp.
__device__ __forceinline__ void emit(const ScanArgs& a, int64_t o, bool hit, int32_t row, float d, int lane) {
  const unsigned mask = __ballot_sync(kAllLanes, hit);
  if (mask == 0) return;  // the same for every lane
  const int leader = __ffs(mask) - 1;
  unsigned long long first = 0;
  if (lane == leader) first = atomicAdd(a.hit_count + o, static_cast<unsigned long long>(__popc(mask)));
  first = __shfl_sync(kAllLanes, first, leader);
  if (!hit) return;
  store_hit(a, o, first + unsigned(__popc(mask & ((1u << lane) - 1u))), row, d);
}

// One evaluated candidate (or none, valid false): its key, or its hit. Every lane calls it.
__device__ __forceinline__ void deliver(const ScanArgs& a, int64_t o, int64_t slot, bool valid, int64_t i,
                                        int32_t row, float d, float radius, int lane) {
  if (a.keys != nullptr) {
    if (valid) a.keys[slot * a.ld + (i - a.begin)] = d;
  } else {
    emit(a, o, valid && d <= radius, row, d, lane);
  }
}

// What a block knows of its query: the vector's components, or the pattern with its match masks
// and the edit state of its threads; SSS's pivot distances.
struct QueryView {
  const float* query = nullptr;
  const uint8_t* pattern = nullptr;
  int64_t m = 0, words = 0;
  const uint64_t* masks = nullptr;
  uint64_t* state = nullptr;
  const float* pivot_distance = nullptr;
};

// Loads block o's query (slot `slot`, index q) into the dynamic shared memory. Every thread calls
// it; it ends with a barrier.
template <bool kStrings>
__device__ QueryView load_query(const ScanArgs& a, int64_t o, int64_t slot, int64_t q, unsigned char* shared) {
  const int tid = int(threadIdx.x);
  QueryView v;
  uint64_t* shared_masks = reinterpret_cast<uint64_t*>(shared);
  float* shared_floats =
      reinterpret_cast<float*>(shared + (kStrings ? size_t(a.shared_pattern_words) * edit::kAlphabet * 8 : 0));

  // The query: vector components, or the pattern's match masks.
  if (!kStrings) {
    const float* source = a.query_vectors + q * a.dim;
    if (a.dim <= a.shared_dim) {
      for (int d = tid; d < a.dim; d += kScanThreads) shared_floats[d] = source[d];
      v.query = shared_floats;
    } else {
      v.query = source;
    }
  } else {
    v.pattern = a.query_bytes + a.query_offsets[q];
    v.m = a.query_offsets[q + 1] - a.query_offsets[q];
    v.words = edit::pattern_words(v.m);
    uint64_t* scratch =
        a.scratch != nullptr ? a.scratch + a.scratch_offset[o] + int64_t(blockIdx.y) * edit_scratch_words(v.m) : nullptr;
    uint64_t* store = shared_masks;
    v.state = scratch;
    if (v.words > kSharedPatternWords) {
      store = scratch;
      v.state = scratch + edit::kAlphabet * v.words;
    }
    for (int64_t w = tid; w < edit::kAlphabet * v.words; w += kScanThreads) store[w] = 0;
    __syncthreads();
    for (int64_t i = tid; i < v.m; i += kScanThreads)
      atomicOr(reinterpret_cast<unsigned long long*>(store + int64_t(v.pattern[i]) * v.words + i / edit::kWordBits),
               1ull << (i % edit::kWordBits));
    v.masks = store;
  }
  // SSS: the query's pivot distances.
  if (a.prune == Prune::sss) {
    const float* source = a.pivot_distances + slot * a.pivots;
    if (a.pivots <= a.shared_pivots) {
      float* pivots = shared_floats + (kStrings ? 0 : a.shared_dim);
      for (int64_t p = tid; p < a.pivots; p += kScanThreads) pivots[p] = source[p];
      v.pivot_distance = pivots;
    } else {
      v.pivot_distance = source;
    }
  }
  __syncthreads();
  return v;
}

template <bool kStrings>
__global__ void __launch_bounds__(kScanThreads) scan_kernel(ScanArgs a) {
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ int16_t picked[kScanThreads];  // chunk positions of the candidates that survive
  __shared__ int32_t warp_counts[kScanWarps];
  __shared__ unsigned long long block_evaluations;

  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int64_t o = blockIdx.x;
  const int64_t slot = a.block_slot != nullptr ? a.block_slot[o] : o;
  const int64_t q = a.query_base + slot;
  const float radius = a.radius_at != nullptr ? a.radius_at[slot * a.radius_stride] : a.radius;
  const int64_t span = a.end - a.begin;
  const int64_t lo = a.begin + span * blockIdx.y / gridDim.y;
  const int64_t hi = a.begin + span * (blockIdx.y + 1) / gridDim.y;

  const QueryView v = load_query<kStrings>(a, o, slot, q, shared);
  const float* query = v.query;
  const int64_t m = v.m, words = v.words;
  const uint64_t* masks = v.masks;
  uint64_t* state = v.state;
  const float* pivot_distance = v.pivot_distance;
  const float* centre_distance = a.prune == Prune::list_of_clusters ? a.centre_distances + slot * a.clusters : nullptr;
  const int32_t stop = a.prune == Prune::list_of_clusters ? a.stop[slot] : 0;
  const int64_t bound = kStrings ? edit::bound_of(radius) : 0;
  if (tid == 0) block_evaluations = 0;
  __syncthreads();

  for (int64_t chunk = lo; chunk < hi; chunk += kScanThreads) {
    // 1. Each thread tests one row.
    const int64_t i = chunk + tid;
    bool candidate = false, direct = false;
    float direct_distance = 0.0f;
    int32_t row = 0;
    if (i < hi) {
      row = row_at(a, i);
      candidate = allowed(a, row);
      if (candidate && a.prune == Prune::list_of_clusters) {
        const int32_t c = a.cluster_of[row];
        if (c < 0) {  // a centre: its distance is known
          direct = true;
          direct_distance = centre_distance[~c];
          candidate = false;
        } else {
          candidate = c <= stop && !beyond(centre_distance[c], a.radii[c] + radius, a.slack);
        }
      } else if (candidate && a.prune == Prune::sss) {
        for (int64_t p = 0; p < a.pivots; ++p) {  // pivot-major: a warp's loads are coalesced
          if (pivot_excludes(a.table[p * a.rows + row], pivot_distance[p], radius, a.slack)) {
            candidate = false;
            break;
          }
        }
      }
      if (a.keys != nullptr && !candidate) a.keys[slot * a.ld + (i - a.begin)] = direct ? direct_distance : infinity();
    }
    if (a.keys == nullptr) emit(a, o, direct && direct_distance <= radius, row, direct_distance, lane);

    // 2. The survivors, compacted.
    const unsigned ballot = __ballot_sync(kAllLanes, candidate);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
    int before = 0, total = 0;
    for (int w = 0; w < kScanWarps; ++w) {
      const int count = warp_counts[w];
      before += w < warp ? count : 0;
      total += count;
    }
    if (candidate) picked[before + __popc(ballot & ((1u << lane) - 1u))] = int16_t(tid);
    __syncthreads();  // also: every thread has read warp_counts before the next chunk writes it

    // 3. Their distances.
    if (kStrings) {
      const bool valid = tid < total;
      int64_t c = 0;
      int32_t r = 0;
      float d = infinity();
      if (valid) {
        c = chunk + picked[tid];
        r = row_at(a, c);
        const int64_t start = a.offsets[r];
        const int64_t e = edit::distance_within(masks, m, words, a.bytes + start, a.offsets[r + 1] - start, bound,
                                                state != nullptr ? state + tid : nullptr, kScanThreads);
        d = e <= bound ? float(e) : infinity();
      }
      deliver(a, o, slot, valid, c, r, d, radius, lane);
    } else {
      const int teams = kScanThreads / a.team, team = tid / a.team, member = tid % a.team;
      for (int first = 0; first < total; first += teams) {  // the same trip count for every thread
        const int j = first + team;
        const bool valid = j < total;
        int64_t c = 0;
        int32_t r = 0;
        if (valid) {
          c = chunk + picked[j];
          r = row_at(a, c);
        }
        const float d = vector_distance(a.metric, query, a.vectors + int64_t(r) * a.dim, valid ? a.dim : 0, member,
                                        a.team);
        deliver(a, o, slot, valid && member == 0, c, r, d, radius, lane);
      }
    }
    if (tid == 0) block_evaluations += static_cast<unsigned long long>(total);
    // `picked` is rewritten only after the next chunk's first barrier, which every thread reaches
    // once it is done with this chunk.
  }
  __syncthreads();
  if (tid == 0 && a.evaluations != nullptr) atomicAdd(a.evaluations + o, block_evaluations);
}

// ---- range search with pruning: work in proportion to the candidates, not to n --------------------
//
// Each warp collects its candidates in a queue in shared memory (a ballot appends them) and
// computes their distances 32 at a time, so no block barrier stands between a row's test and its
// distance: SSS tests 32 consecutive rows per pivot load (pivot-major table), List of Clusters
// walks only the member lists of the clusters that survive.

// Candidates a warp's queue holds: up to 31 waiting plus one ballot's 32.
constexpr int kQueueSlots = 2 * kWarpLanes;
// SSS: rows a lane tests per step, and pivots per step after the first (independent loads in flight).
constexpr int kRowsPerLane = 4;
constexpr int kPivotBatch = 4;

// A warp's queue of candidate rows and the distances it has computed.
struct WarpQueue {
  int32_t* rows;  // kQueueSlots
  int count;      // the same in every lane
  unsigned long long evaluated;
};

// Computes and delivers the distances of the first `take` (<= 32) queued rows. Every lane calls it.
template <bool kStrings>
__device__ __forceinline__ void drain(const ScanArgs& a, const QueryView& v, int64_t o, float radius, int64_t bound,
                                      const int32_t* rows, int take, int lane) {
  if (kStrings) {
    const bool valid = lane < take;
    const int32_t r = valid ? rows[lane] : 0;
    float d = infinity();
    if (valid) {
      const int64_t start = a.offsets[r];
      const int64_t e = edit::distance_within(v.masks, v.m, v.words, a.bytes + start, a.offsets[r + 1] - start, bound,
                                              v.state != nullptr ? v.state + threadIdx.x : nullptr, kScanThreads);
      d = e <= bound ? float(e) : infinity();
    }
    emit(a, o, valid && d <= radius, r, d, lane);
  } else {
    const int teams = kWarpLanes / a.team, team = lane / a.team, member = lane % a.team;
    for (int first = 0; first < take; first += teams) {  // the same trip count for every lane
      const int j = first + team;
      const bool valid = j < take;
      const int32_t r = valid ? rows[j] : 0;
      const float d = vector_distance(a.metric, v.query, a.vectors + int64_t(r) * a.dim, valid ? a.dim : 0, member,
                                      a.team);
      emit(a, o, valid && member == 0 && d <= radius, r, d, lane);
    }
  }
}

// Appends `row` where `candidate`, and computes a full batch of 32. Every lane calls it.
template <bool kStrings>
__device__ __forceinline__ void push(const ScanArgs& a, const QueryView& v, int64_t o, float radius, int64_t bound,
                                     WarpQueue& queue, bool candidate, int32_t row, int lane) {
  const unsigned ballot = __ballot_sync(kAllLanes, candidate);
  if (ballot == 0) return;
  if (candidate) queue.rows[queue.count + __popc(ballot & ((1u << lane) - 1u))] = row;
  queue.count += __popc(ballot);
  __syncwarp();
  if (queue.count < kWarpLanes) return;
  drain<kStrings>(a, v, o, radius, bound, queue.rows, kWarpLanes, lane);
  queue.evaluated += kWarpLanes;
  const int rest = queue.count - kWarpLanes;
  const int32_t moved = lane < rest ? queue.rows[kWarpLanes + lane] : 0;
  __syncwarp();
  if (lane < rest) queue.rows[lane] = moved;
  __syncwarp();
  queue.count = rest;
}

// Range search (hits output) with List of Clusters or SSS pruning over every row. Block o searches
// its query; split y of gridDim.y takes a share of the rows (SSS) or of the clusters (LC).
template <bool kStrings>
__global__ void __launch_bounds__(kScanThreads) pruned_kernel(ScanArgs a) {
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ int32_t queues[kScanWarps][kQueueSlots];
  __shared__ int32_t kept[kScanThreads];      // LC: the chunk's surviving clusters
  __shared__ int32_t kept_end[kScanThreads];  // LC: the end of their members in the chunk's walk
  __shared__ int32_t warp_sums[kScanWarps];
  __shared__ int32_t warp_kept[kScanWarps];

  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int64_t o = blockIdx.x;
  const int64_t slot = a.block_slot != nullptr ? a.block_slot[o] : o;
  const int64_t q = a.query_base + slot;
  const float radius = a.radius_at != nullptr ? a.radius_at[slot * a.radius_stride] : a.radius;
  const QueryView v = load_query<kStrings>(a, o, slot, q, shared);
  const int64_t bound = kStrings ? edit::bound_of(radius) : 0;
  WarpQueue queue{queues[warp], 0, 0};

  if (a.prune == Prune::sss) {
    const int64_t span = a.end - a.begin;
    const int64_t lo = a.begin + span * blockIdx.y / gridDim.y;
    const int64_t hi = a.begin + span * (blockIdx.y + 1) / gridDim.y;
    const float first_pivot = a.pivots > 0 ? v.pivot_distance[0] : 0.0f;
    constexpr int kStep = kScanThreads * kRowsPerLane;
    for (int64_t base = lo + int64_t(warp) * kWarpLanes * kRowsPerLane; base < hi; base += kStep) {
      float first[kRowsPerLane];
#pragma unroll
      for (int j = 0; j < kRowsPerLane; ++j) {
        const int64_t row = base + j * kWarpLanes + lane;
        first[j] = row < hi && a.pivots > 0 ? __ldg(a.table + row) : 0.0f;
      }
      bool alive[kRowsPerLane];
      bool any = false;
#pragma unroll
      for (int j = 0; j < kRowsPerLane; ++j) {
        const int64_t row = base + j * kWarpLanes + lane;
        alive[j] = row < hi && (a.pivots == 0 || !pivot_excludes(first[j], first_pivot, radius, a.slack));
        any = any || alive[j];
      }
      // The next pivots, kPivotBatch at a time for the lane's rows together (all their loads in
      // flight at once: a row near the query passes many pivots, and each load waits on L2).
      for (int64_t p = 1; any && p < a.pivots; p += kPivotBatch) {
        float gap[kRowsPerLane][kPivotBatch];
#pragma unroll
        for (int j = 0; j < kRowsPerLane; ++j)
#pragma unroll
          for (int b = 0; b < kPivotBatch; ++b)
            gap[j][b] = alive[j] && p + b < a.pivots ? __ldg(a.table + (p + b) * a.rows + base + j * kWarpLanes + lane)
                                                     : 0.0f;
        any = false;
#pragma unroll
        for (int j = 0; j < kRowsPerLane; ++j) {
#pragma unroll
          for (int b = 0; b < kPivotBatch; ++b)
            if (p + b < a.pivots && pivot_excludes(gap[j][b], v.pivot_distance[p + b], radius, a.slack)) alive[j] = false;
          any = any || alive[j];
        }
      }
#pragma unroll
      for (int j = 0; j < kRowsPerLane; ++j) {
        const int64_t row = base + j * kWarpLanes + lane;
        push<kStrings>(a, v, o, radius, bound, queue, alive[j] && allowed(a, int32_t(row)), int32_t(row), lane);
      }
    }
  } else {
    const float* centre_distance = a.centre_distances + slot * a.clusters;
    const int32_t stop = a.stop[slot];
    const int64_t lo = a.clusters * blockIdx.y / gridDim.y;
    const int64_t hi = a.clusters * (blockIdx.y + 1) / gridDim.y;
    for (int64_t chunk = lo; chunk < hi; chunk += kScanThreads) {
      // 1. A thread a cluster: its centre's hit (the distance is known), whether its members are walked.
      const int64_t c = chunk + tid;
      int32_t size = 0;
      bool centre_hit = false;
      int32_t centre = 0;
      float centre_d = 0.0f;
      if (c < hi) {
        centre = a.centre_rows[c];
        centre_d = centre_distance[c];
        centre_hit = centre_d <= radius && allowed(a, centre);
        if (c <= stop && !beyond(centre_d, a.radii[c] + radius, a.slack))
          size = a.member_begin[c + 1] - a.member_begin[c];
      }
      emit(a, o, centre_hit, centre, centre_d, lane);
      // 2. The surviving clusters compacted, with the running sum of their sizes.
      int32_t sum = size;
      for (int offset = 1; offset < kWarpLanes; offset *= 2) {
        const int32_t up = __shfl_up_sync(kAllLanes, sum, offset);
        if (lane >= offset) sum += up;
      }
      const unsigned ballot = __ballot_sync(kAllLanes, size > 0);
      if (lane == kWarpLanes - 1) {
        warp_sums[warp] = sum;
        warp_kept[warp] = __popc(ballot);
      }
      __syncthreads();
      int32_t sum_before = 0, kept_before = 0, total = 0, kept_total = 0;
      for (int w = 0; w < kScanWarps; ++w) {
        sum_before += w < warp ? warp_sums[w] : 0;
        kept_before += w < warp ? warp_kept[w] : 0;
        total += warp_sums[w];
        kept_total += warp_kept[w];
      }
      if (size > 0) {
        const int at = kept_before + __popc(ballot & ((1u << lane) - 1u));
        kept[at] = int32_t(c);
        kept_end[at] = sum_before + sum;
      }
      __syncthreads();
      // 3. Their members, a thread each, into the warps' queues.
      for (int32_t k0 = 0; k0 < total; k0 += kScanThreads) {  // the same trip count for every thread
        const int32_t k = k0 + tid;
        bool candidate = false;
        int32_t row = 0;
        if (k < total) {
          int lo_at = 0, hi_at = kept_total - 1;  // the first kept cluster whose end is above k
          while (lo_at < hi_at) {
            const int mid = (lo_at + hi_at) / 2;
            if (kept_end[mid] > k) hi_at = mid;
            else lo_at = mid + 1;
          }
          const int32_t start = lo_at > 0 ? kept_end[lo_at - 1] : 0;
          const int32_t cluster = kept[lo_at];
          const int32_t at = a.member_begin[cluster] + (k - start);
          row = a.members[at];
          candidate = !pivot_excludes(a.member_distances[at], centre_distance[cluster], radius, a.slack) &&
                      allowed(a, row);
        }
        push<kStrings>(a, v, o, radius, bound, queue, candidate, row, lane);
      }
      __syncthreads();  // every thread is done with kept before the next chunk rewrites it
    }
  }
  drain<kStrings>(a, v, o, radius, bound, queue.rows, queue.count, lane);
  queue.evaluated += unsigned(queue.count);
  if (lane == 0 && a.evaluations != nullptr && queue.evaluated > 0) atomicAdd(a.evaluations + o, queue.evaluated);
}

__global__ void lc_stop_kernel(const float* radii, int64_t clusters, const float* centre_distances, float radius,
                               const float* radius_at, int64_t radius_stride, float slack, int32_t* stop) {
  __shared__ int first;
  const int64_t slot = blockIdx.x;
  const float r = radius_at != nullptr ? radius_at[slot * radius_stride] : radius;
  if (threadIdx.x == 0) first = INT_MAX;
  __syncthreads();
  const float* d = centre_distances + slot * clusters;
  for (int64_t c = threadIdx.x; c < clusters; c += blockDim.x)
    if (beyond(radii[c], d[c] + r, slack)) atomicMin(&first, int(c));
  __syncthreads();
  if (threadIdx.x == 0) stop[slot] = first == INT_MAX ? int32_t(clusters - 1) : int32_t(first);
}

}  // namespace

float pruning_slack(Metric metric, int64_t dim) {
  if (metric == Metric::edit) return 0.0f;
  return kSlackMargin * float(dim + 2) * kSlackUnit;
}

int scan_splits(int64_t blocks, int64_t span, int sm_count) {
  const int64_t wanted = (2 * int64_t(sm_count) + blocks - 1) / std::max<int64_t>(blocks, 1);
  const int64_t most = std::max<int64_t>(1, span / kMinCandidatesPerSplit);
  return int(std::clamp<int64_t>(std::min(wanted, most), 1, kMaxSplits));
}

MetricScan::MetricScan(Resources& resources, const MetricDevice& device, const Objects& queries,
                       const RowFilter& filter)
    : resources(resources), device(device), stream(resources.stream(0)) {
  DevicePool& pool = resources.pool();
  const int id = resources.device();
  if (device.strings()) {
    query_offsets_ = PoolBuffer<int64_t>(pool, queries.n + 1);
    query_bytes_ = PoolBuffer<uint8_t>(pool, padded_string_bytes(queries.strings));
    copy_strings_to_device(resources, queries.strings, query_offsets_.get(), query_bytes_.get(), stream);
    lengths_.resize(size_t(queries.n));
    for (int64_t q = 0; q < queries.n; ++q) lengths_[size_t(q)] = queries.strings.length(q);
  } else if (queries.n > 0) {
    query_vectors_ = PoolBuffer<float>(pool, queries.n * device.dim);
    copy_to_device(resources.staging(), id, query_vectors_.get(), queries.vectors,
                   size_t(queries.n * device.dim) * sizeof(float), stream);
  }
  if (filter.bits != nullptr) {
    const int64_t bytes = (std::max<int64_t>(filter.nbits, 0) + 7) / 8;
    filter_ = PoolBuffer<uint8_t>(pool, std::max<int64_t>(bytes, 1));
    if (bytes > 0) copy_to_device(resources.staging(), id, filter_.get(), filter.bits, size_t(bytes), stream);
    filter_bits_ = std::max<int64_t>(filter.nbits, 0);
  }
}

ScanArgs MetricScan::args() const {
  ScanArgs a;
  a.metric = device.metric;
  a.dim = int32_t(device.dim);
  a.team = device.strings() ? 1 : team_size(device.dim);
  a.slack = pruning_slack(device.metric, device.dim);
  a.rows = device.rows;
  a.vectors = device.vectors.get();
  a.offsets = device.offsets.get();
  a.bytes = device.bytes.get();
  a.query_vectors = query_vectors_.get();
  a.query_offsets = query_offsets_.get();
  a.query_bytes = query_bytes_.get();
  a.filter = filter_.get();  // nullptr without a filter
  a.filter_bits = filter_bits_;
  a.cluster_of = device.cluster_of.get();
  a.centre_rows = device.centre_rows.get();
  a.member_begin = device.member_begin.get();
  a.members = device.members.get();
  a.member_distances = device.member_distances.get();
  a.radii = device.radii.get();
  a.clusters = device.clusters;
  a.table = device.table.get();
  a.pivots = device.pivots;
  a.bucket_pivots = device.bucket_pivots;
  a.bucket_words = device.bucket_words;
  a.bucket_edges = device.bucket_edges.get();
  a.bucket_bits = device.bucket_bits.get();
  return a;
}

int64_t MetricScan::scratch_bytes(int64_t q) const {
  return device.strings() ? edit_scratch_words(lengths_[size_t(q)]) * int64_t(sizeof(uint64_t)) : 0;
}

void MetricScan::launch(ScanArgs a, const std::vector<int64_t>& block_queries, int64_t budget_bytes) {
  const int64_t blocks = int64_t(block_queries.size());
  if (blocks == 0 || a.end <= a.begin) return;
  require(blocks <= INT32_MAX, "metric scan: ", blocks, " blocks");
  // The pruned scan: a range search (hits) with LC or SSS over every row in order.
  const bool pruned = a.keys == nullptr && a.hit_count != nullptr && a.row_list == nullptr && a.stride_count == 0 &&
                      (a.prune == Prune::sss || (a.prune == Prune::list_of_clusters && a.begin == 0 &&
                                                 a.end == device.rows && a.clusters > 0));
  const int64_t span = pruned && a.prune == Prune::list_of_clusters ? a.clusters : a.end - a.begin;
  int splits = scan_splits(blocks, span, resources.limits().sm_count);
  size_t shared_bytes = 0;
  if (device.strings()) {
    int64_t scratch_per_split = 0, longest = 0;
    for (int64_t q : block_queries) {
      scratch_per_split += scratch_bytes(q);
      longest = std::max(longest, lengths_[size_t(q)]);
    }
    if (scratch_per_split > 0)
      splits = int(std::clamp<int64_t>(budget_bytes / scratch_per_split, 1, splits));
    std::vector<int64_t> offsets(static_cast<size_t>(blocks));
    int64_t total = 0;
    for (int64_t o = 0; o < blocks; ++o) {
      offsets[size_t(o)] = total;
      total += edit_scratch_words(lengths_[size_t(block_queries[size_t(o)])]) * splits;
    }
    a.scratch = nullptr;
    a.scratch_offset = nullptr;
    if (total > 0) {
      scratch_ = PoolBuffer<uint64_t>(resources.pool(), total);
      scratch_offsets_ = PoolBuffer<int64_t>(resources.pool(), blocks);
      copy_to_device(resources.staging(), resources.device(), scratch_offsets_.get(), offsets.data(),
                     offsets.size() * sizeof(int64_t), stream);
      a.scratch = scratch_.get();
      a.scratch_offset = scratch_offsets_.get();
    }
    a.shared_pattern_words = int32_t(std::min(edit::pattern_words(longest), kSharedPatternWords));
    a.shared_dim = 0;
    shared_bytes = size_t(a.shared_pattern_words) * edit::kAlphabet * sizeof(uint64_t);
  } else {
    a.shared_pattern_words = 0;
    a.shared_dim = a.dim <= kSharedQueryFloats ? a.dim : 0;
    shared_bytes = size_t(a.shared_dim) * sizeof(float);
  }
  a.shared_pivots = a.prune == Prune::sss && a.pivots <= kSharedPivots ? int32_t(a.pivots) : 0;
  shared_bytes += size_t(a.shared_pivots) * sizeof(float);

  void (*kernel)(ScanArgs) = pruned ? (device.strings() ? pruned_kernel<true> : pruned_kernel<false>)
                                    : (device.strings() ? scan_kernel<true> : scan_kernel<false>);
  // Always the same value (the most any launch takes), so that searches of several threads never
  // lower it under one another's launch.
  if (shared_bytes + kStaticSharedBytes > size_t(kDefaultSharedBytes))
    QV_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSharedBytes));
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(splits));
  kernel<<<grid, kScanThreads, shared_bytes, stream>>>(a);
  QV_LAUNCH_CHECK("metric scan_kernel");
}

void MetricScan::lc_stop(const ScanArgs& a, int64_t slots, int32_t* stop) {
  if (slots == 0) return;
  lc_stop_kernel<<<unsigned(slots), kScanThreads, 0, stream>>>(a.radii, a.clusters, a.centre_distances, a.radius,
                                                                a.radius_at, a.radius_stride, a.slack, stop);
  QV_LAUNCH_CHECK("metric lc_stop_kernel");
}

}  // namespace quiver::gpu::metric_space
