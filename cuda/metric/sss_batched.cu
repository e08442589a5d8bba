// sss_batched.h: the batched SSS range kernel and its launch.
//
// A block takes kTileQueries queries and kTileRows rows. Most pairs leave at the first pivots (on
// the synthetic 100k x 128 set at its smallest radius: 59% of pairs are alive after one pivot, 13%
// after four, 0.6% after sixteen, 0.2% after all 44), so the work goes in rounds, each on the pairs
// the last one left:
//   1. every pair against the buckets of the first pivots (cpp/metric/sss_buckets.h, the tile's
//      words of every bucket line staged in shared memory): a thread takes one query and 32 rows,
//      and a pivot costs it three shared loads and two logic operations for the 32 pairs; the
//      pairs left are listed;
//   2. the listed pairs against every pivot's exact test (the scan's pivot_excludes), the table read
//      from global memory, kPivotBatch loads in flight at once;
//   3. the pairs left, a team of lanes each: the true distance (vector_distance.cuh, the float every
//      method computes), and the hit.
// The pairs alive are a list of 16-bit (query, row) in shared memory, compacted in place by round 2.
// Round 1 takes the tile's queries in parts and the list is flushed through rounds 2 and 3 only when
// the next part might not fit, so that those rounds see the survivors of many parts at once (a few
// dozen a part at small radii: one part at a time left most warps waiting at the barriers).
//
// A query's buckets for a pivot are those of the distances the exact test keeps: |t - p| > r +
// s (t + p + r) holds exactly when t lies outside [p (1 - s) / (1 + s) - r, (p + r) (1 + s) / (1 - s)],
// computed in double and rounded outwards to float, so the buckets drop no pair that the exact test
// keeps (the slack s covers the rounding of the distances, as in the scan).
#include "cuda/metric/sss_batched.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cpp/core/error.h"
#include "cuda/core/error.h"
#include "cuda/metric/scan_tests.cuh"
#include "cpp/metric/sss_buckets.h"
#include "cuda/metric/vector_distance.cuh"

namespace quiver::gpu::metric_space {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpLanes;
// A block's tile: kTileQueries queries x kTileRows rows, taken by round 1 in parts of kPartQueries
// queries (each thread one query of the part and one word of 32 rows).
constexpr int kTileQueries = 256;
constexpr int kTileRows = sss_buckets::kTileRows;
constexpr int kTileWords = sss_buckets::kTileWords;
constexpr int kPartQueries = kThreads / kTileWords;
constexpr int kPartPairs = kPartQueries * kTileRows;
constexpr int kBuckets = sss_buckets::kBuckets;
constexpr int64_t kBucketPivots = sss_buckets::kPivots;
static_assert(kTileQueries % kPartQueries == 0, "whole parts");
// A listed pair is (query << kRowBits) | row, 16 bits. The list holds two parts' pairs: the pairs
// of the parts taken since the last flush (rounds 2 and 3), which comes when the next part might
// not fit, so that the later rounds take many parts' few survivors at once.
constexpr int kRowBits = 7;
constexpr int kListPairs = 2 * kPartPairs;
static_assert(kTileRows == 1 << kRowBits && kTileQueries * kTileRows <= 65536, "pairs fit 16 bits");
// Shared memory: the tile's bucket lines 8.3 KiB, the list 32 KiB, the queries 3 KiB: five blocks
// an SM, so at most 48 registers a thread.
constexpr int kBlocksPerSm = 5;
// Round 2: table entries whose loads are in flight together; round 3: distances a team computes at once.
constexpr int kPivotBatch = 8;
constexpr int kDistancePairs = 2;
// Fewer queries than this take the one-block-per-query scan, which splits each query over blocks
// (a tile of a few queries would leave most of round 1's lanes idle).
constexpr int64_t kMinBatchedQueries = 16;

__device__ __forceinline__ float positive_infinity() { return __int_as_float(0x7f800000); }
// An interval that keeps every row.
__device__ __forceinline__ float2 everything() { return make_float2(-positive_infinity(), positive_infinity()); }

// The slack's factors in the kept interval: (1 - s) / (1 + s) and (1 + s) / (1 - s).
struct SlackFactors {
  double below, above;
};

// The row distances t to a pivot that pivot_excludes keeps for a query at distance `pivot` from it:
// [p (1 - s) / (1 + s) - r, (p + r) (1 + s) / (1 - s)] (module comment). Nothing is excluded for a
// pivot distance that is not finite (nor does the scan's test, whose gap is then infinite or NaN).
__device__ __forceinline__ float2 kept_interval(float pivot, float radius, SlackFactors f) {
  if (!isfinite(pivot)) return everything();
  const double p = pivot, r = radius;
  return make_float2(__double2float_rd(p * f.below - r), __double2float_ru((p + r) * f.above));
}

// The rows first .. first + 31 (first a multiple of 32) that exist and that the filter lets through,
// bit i for row first + i.
__device__ __forceinline__ uint32_t usable_rows(const ScanArgs& a, int64_t first) {
  uint32_t rows = low_rows(a.rows - first);
  if (a.filter != nullptr && rows != 0) {
    uint32_t allowed_rows = 0;  // the filter's bits from `first`: bit (row & 7) of byte row >> 3
    for (int b = 0; b < 4; ++b) {
      const int64_t byte = first / 8 + b;
      if (byte * 8 < a.filter_bits) allowed_rows |= uint32_t(a.filter[byte]) << (8 * b);
    }
    rows &= allowed_rows & low_rows(a.filter_bits - first);
  }
  return rows;
}

// Appends `pair` to the list where `keep`. Every lane of the warp calls it; one atomic a warp.
__device__ __forceinline__ void append(uint16_t* list, int* count, bool keep, uint16_t pair, int lane) {
  const unsigned ballot = __ballot_sync(kAllLanes, keep);
  if (ballot == 0) return;
  const int leader = __ffs(ballot) - 1;
  int base = 0;
  if (lane == leader) base = atomicAdd(count, __popc(ballot));
  base = __shfl_sync(kAllLanes, base, leader);
  if (keep) list[base + __popc(ballot & ((1u << lane) - 1u))] = pair;
}

// Appends (row, d) to query o's hits where `hit` (store_hit), as metric_scan.cu's emit does for
// block o, but the warp's lanes may hold different queries. Every lane calls it; one atomic per
// query a warp.
__device__ __forceinline__ void emit_hit(const ScanArgs& a, bool hit, int64_t o, int32_t row, float d, int lane) {
  const unsigned hits = __ballot_sync(kAllLanes, hit);
  if (!hit) return;
  const unsigned peers = __match_any_sync(hits, static_cast<unsigned long long>(o));
  const int leader = __ffs(peers) - 1;
  unsigned long long first = 0;
  if (lane == leader) first = atomicAdd(a.hit_count + o, static_cast<unsigned long long>(__popc(peers)));
  first = __shfl_sync(peers, first, leader);
  store_hit(a, o, first + unsigned(__popc(peers & ((1u << lane) - 1u))), row, d);
}

// Thread (o, p): query o's buckets [lo, hi] for bucket pivot p (bytes 2p, 2p + 1 of the query's
// kBucketPivots * 2), those of its kept interval (kept_interval); [0, kBuckets - 1] past the
// bucketed pivots.
__global__ void bucket_ranges_kernel(ScanArgs a, int64_t queries, SlackFactors factors, uint8_t* ranges) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= queries * kBucketPivots) return;
  const int64_t o = i / kBucketPivots;
  const int p = int(i % kBucketPivots);
  int lo = 0, hi = kBuckets - 1;
  if (p < a.bucket_pivots) {
    const int64_t slot = a.block_slot != nullptr ? a.block_slot[o] : o;
    const float2 kept = kept_interval(a.pivot_distances[slot * a.pivots + p], a.radius, factors);
    const float* edges = a.bucket_edges + p * sss_buckets::kEdges;
    lo = bucket_of(edges, kept.x);  // a NaN: bucket 0
    if (!isnan(kept.y)) hi = bucket_of(edges, kept.y);
  }
  ranges[2 * i] = uint8_t(lo);
  ranges[2 * i + 1] = uint8_t(hi);
}

// The block's shared state.
struct Tile {
  uint32_t bits[kBucketPivots][kBuckets + 1][kTileWords];  // the tile's words of every bucket line
  uint16_t pairs[kListPairs];                              // the pairs alive
  int64_t query_slot[kTileQueries];  // the slot of query q (its pivot distances, its vector)
  unsigned evaluated[kTileQueries];  // distances computed per query
  int listed;                        // the pairs in the list
  int kept;                          // the pairs round 2 keeps
};

// 1. Thread (query q of part `part`, word w) keeps the rows of word w whose buckets lie in q's
//    ranges, pivot after pivot, and appends them to the list.
__device__ void bucket_round(const ScanArgs& a, Tile& t, int64_t first_query, int64_t queries, int part) {
  const int tid = int(threadIdx.x), lane = tid & 31;
  const int q = part * kPartQueries + tid / kTileWords, w = tid % kTileWords;
  const int64_t row0 = int64_t(blockIdx.x) * kTileRows;
  uint32_t alive = first_query + q < queries ? usable_rows(a, row0 + w * 32) : 0u;
  if (alive != 0) {
    const uint4* from = reinterpret_cast<const uint4*>(a.bucket_ranges + (first_query + q) * kBucketPivots * 2);
    const uint4 first = __ldg(from), second = __ldg(from + 1);
    const uint32_t ranges[kBucketPivots / 2] = {first.x, first.y, first.z, first.w, second.x, second.y, second.z, second.w};
#pragma unroll
    for (int p = 0; p < kBucketPivots; ++p) {
      if (p >= a.bucket_pivots) break;
      const uint32_t range = ranges[p / 2] >> (16 * (p % 2));  // [lo, hi] in its two low bytes
      const int lo = int(range & 0xff), hi = int((range >> 8) & 0xff);
      alive &= kept_rows(t.bits[p][lo][w], t.bits[p][hi + 1][w], t.bits[p][kBuckets][w]);
    }
  }
  // The thread's pairs, in one run of the list: offsets by a scan over the warp.
  const int mine = __popc(alive);
  int inclusive = mine;
  for (int offset = 1; offset < kWarpLanes; offset *= 2) {
    const int up = __shfl_up_sync(kAllLanes, inclusive, offset);
    if (lane >= offset) inclusive += up;
  }
  int base = 0;
  if (lane == kWarpLanes - 1) base = atomicAdd(&t.listed, inclusive);
  int at = __shfl_sync(kAllLanes, base, kWarpLanes - 1) + inclusive - mine;
  const int head = (q << kRowBits) | (w * 32);
  while (alive != 0) {
    t.pairs[at++] = uint16_t(head | (__ffs(int(alive)) - 1));
    alive &= alive - 1;
  }
}

// 2. The listed pairs against every pivot's exact test, the table from global memory (mostly L2),
//    kPivotBatch loads in flight at once; a lane a pair. The survivors are compacted in place.
__device__ void exact_round(const ScanArgs& a, Tile& t, int count) {
  const int tid = int(threadIdx.x), lane = tid & 31;
  const int64_t pivots = a.pivots;
  const float* tile_table = a.table + int64_t(blockIdx.x) * kTileRows;
  for (int base = 0; base < count; base += kThreads) {  // the same trip count for every thread
    const int i = base + tid;
    const uint16_t pair = i < count ? t.pairs[i] : 0;
    __syncthreads();  // every pair of this pass read before the survivors are written over them
    bool keep = false;
    if (i < count) {
      const int q = pair >> kRowBits, r = pair & (kTileRows - 1);
      keep = true;
      const float* table = tile_table + r;
      const float* pivot = a.pivot_distances + t.query_slot[q] * pivots;
      for (int64_t p = 0; keep && p < pivots; p += kPivotBatch) {
        float entry[kPivotBatch], distance[kPivotBatch];
#pragma unroll
        for (int b = 0; b < kPivotBatch; ++b) {
          entry[b] = p + b < pivots ? __ldg(table + (p + b) * a.rows) : 0.0f;
          distance[b] = p + b < pivots ? __ldg(pivot + p + b) : 0.0f;
        }
#pragma unroll
        for (int b = 0; b < kPivotBatch; ++b)
          if (p + b < pivots && pivot_excludes(entry[b], distance[b], a.radius, a.slack)) keep = false;
      }
    }
    append(t.pairs, &t.kept, keep, pair, lane);
  }
}

// 3. The distances of the first `count` listed pairs, a team of lanes each, and their hits. A
//    team computes kDistancePairs distances at once, their loads in flight together.
__device__ void distance_round(const ScanArgs& a, Tile& t, int64_t first_query, int count) {
  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int64_t row0 = int64_t(blockIdx.x) * kTileRows;
  const int team = a.team, teams = kWarpLanes / team, my_team = lane / team, member = lane % team;
  const int stride = kWarps * teams;  // pairs a pass of the block takes with one distance a team
  for (int first = warp * teams; first < count; first += kDistancePairs * stride) {  // the same trip count in a warp
    const float* q[kDistancePairs];
    const float* x[kDistancePairs];
    int query[kDistancePairs];
    int32_t row[kDistancePairs];
    bool valid[kDistancePairs];
#pragma unroll
    for (int i = 0; i < kDistancePairs; ++i) {
      const int j = first + i * stride + my_team;
      valid[i] = j < count;
      const int pair = valid[i] ? t.pairs[j] : 0;  // pair 0 stands in for a missing one: readable
      query[i] = pair >> kRowBits;
      row[i] = int32_t(row0 + (pair & (kTileRows - 1)));
      q[i] = a.query_vectors + (a.query_base + t.query_slot[query[i]]) * a.dim;
      x[i] = a.vectors + int64_t(row[i]) * a.dim;
    }
    float d[kDistancePairs];
    vector_distances<kDistancePairs>(a.metric, q, x, valid[0] ? a.dim : 0, member, team, d);
#pragma unroll
    for (int i = 0; i < kDistancePairs; ++i) {
      const bool counted = valid[i] && member == 0;
      if (counted) atomicAdd(&t.evaluated[query[i]], 1u);
      emit_hit(a, counted && d[i] <= a.radius, first_query + query[i], row[i], d[i], lane);
    }
  }
}

// Rounds 2 and 3 on the listed pairs, leaving the list empty. Every thread calls it.
__device__ void flush(const ScanArgs& a, Tile& t, int64_t first_query) {
  exact_round(a, t, t.listed);
  __syncthreads();
  distance_round(a, t, first_query, t.kept);
  __syncthreads();
  if (threadIdx.x == 0) t.listed = t.kept = 0;
  __syncthreads();
}

// Block (x, y): rows x * kTileRows .., queries o = y * kTileQueries .. (of 0 .. queries-1).
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) sss_batched_kernel(ScanArgs a, int64_t queries) {
  __shared__ Tile t;
  const int tid = int(threadIdx.x);
  const int64_t first_query = int64_t(blockIdx.y) * kTileQueries;  // o of the tile's query 0

  for (int q = tid; q < kTileQueries; q += kThreads) {
    const int64_t o = first_query + q;
    t.query_slot[q] = o < queries ? (a.block_slot != nullptr ? a.block_slot[o] : o) : 0;
    t.evaluated[q] = 0;
  }
  if (tid == 0) t.listed = t.kept = 0;
  // The tile's words of every bucket line, 16 bytes a line (the lines are words() apart).
  static_assert(kTileWords == 4, "a line's tile words are one uint4");
  const uint4* lines = reinterpret_cast<const uint4*>(a.bucket_bits) + blockIdx.x;
  const int64_t line_stride = a.bucket_words / kTileWords;  // in uint4
  for (int i = tid; i < a.bucket_pivots * (kBuckets + 1); i += kThreads)
    reinterpret_cast<uint4*>(&t.bits[0][0][0])[i] = __ldg(lines + i * line_stride);
  __syncthreads();

  const int parts = int((min(queries - first_query, int64_t(kTileQueries)) + kPartQueries - 1) / kPartQueries);
  for (int part = 0; part < parts; ++part) {
    if (t.listed > kListPairs - kPartPairs) flush(a, t, first_query);  // the same for every thread
    bucket_round(a, t, first_query, queries, part);
    __syncthreads();
  }
  flush(a, t, first_query);
  if (a.evaluations != nullptr)
    for (int q = tid; q < kTileQueries; q += kThreads)
      if (t.evaluated[q] > 0) atomicAdd(a.evaluations + first_query + q, static_cast<unsigned long long>(t.evaluated[q]));
}

}  // namespace

bool sss_batched_applies(const MetricDevice& device, Prune prune, int64_t queries) {
  if (prune != Prune::sss || device.strings() || device.pivots == 0 || device.bucket_pivots == 0) return false;
  // QUIVER_SSS_BATCHED: 0 never (the one-block-per-query scan), 1 for any number of queries.
  const char* setting = std::getenv("QUIVER_SSS_BATCHED");
  if (setting != nullptr && std::strcmp(setting, "0") == 0) return false;
  if (setting != nullptr && std::strcmp(setting, "1") == 0) return true;
  return queries >= kMinBatchedQueries;
}

void sss_batched_range(const ScanArgs& args, int64_t queries, DevicePool& pool, cudaStream_t stream) {
  require(args.dim > 0 && args.pivots > 0 && args.pivot_distances != nullptr && args.keys == nullptr &&
              args.hit_count != nullptr && args.radius_at == nullptr && args.row_list == nullptr &&
              args.stride_count == 0 && args.bucket_pivots > 0 && args.bucket_bits != nullptr,
          "batched SSS scan: not a range scan of every row over vectors with pivots and their buckets");
  if (queries == 0 || args.rows == 0) return;
  const int64_t row_tiles = (args.rows + kTileRows - 1) / kTileRows;
  const int64_t query_tiles = (queries + kTileQueries - 1) / kTileQueries;
  require(query_tiles <= 65535, "batched SSS scan: ", queries, " queries in one launch");
  const double s = args.slack;
  const SlackFactors factors{(1.0 - s) / (1.0 + s), (1.0 + s) / (1.0 - s)};
  // Back in the pool at return, while the kernels may still run: only later work on the stream
  // can be handed it (memory_pool.h).
  PoolBuffer<uint8_t> ranges(pool, queries * kBucketPivots * 2);
  const int64_t range_threads = queries * kBucketPivots;
  bucket_ranges_kernel<<<unsigned((range_threads + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      args, queries, factors, ranges.get());
  QV_LAUNCH_CHECK("sss bucket_ranges_kernel");
  ScanArgs scan = args;
  scan.bucket_ranges = ranges.get();
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(query_tiles));
  sss_batched_kernel<<<grid, kThreads, 0, stream>>>(scan, queries);
  QV_LAUNCH_CHECK("sss_batched_kernel");
}

}  // namespace quiver::gpu::metric_space
