// sss_batched.h: the batched SSS range kernel and its launch.
//
// A block takes kTileQueries queries and kTileRows rows, and stages in shared memory its rows'
// distances to the first kStagedPivots pivots and its queries' distances to them (one round trip to
// memory for the block; the pivot-major table gives coalesced rows). Most pairs leave at the first
// pivots (on the synthetic 100k x 128 set at its smallest radius: 59% of pairs are alive after one
// pivot, 13% after four, 1% after twelve, 0.3% after 32), so the work goes in rounds, each on the
// pairs the last one left:
//   1. every pair against the first kFirstPivots pivots: a lane holds one query's kept intervals in
//      registers and reads four rows' pivot distances at once (the warp's lanes read the same
//      words: a broadcast), two comparisons per pair and pivot;
//   2. the survivors against the intervals of the next pivots, up to kIntervalPivots;
//   3. the few left against the other staged pivots (the scan's test), then the pivots beyond them
//      from global memory, kPivotBatch loads in flight at once;
//   4. the pairs left, a team of lanes each: the true distance (vector_distance.cuh, the float every
//      method computes), and the hit.
// The pairs alive are a list of 16-bit (query, row) in shared memory, compacted in place by each
// round. A block waits on memory only when staging, for the pivots beyond the staged ones, and for
// the distances.
//
// The interval test is the scan's pivot_excludes (scan_tests.cuh) solved for the row's distance to
// the pivot: |t - p| > r + s (t + p + r) holds exactly when t lies outside
// [p (1 - s) / (1 + s) - r, (p + r) (1 + s) / (1 - s)], computed in double per query and pivot and
// rounded outwards to float, so it excludes no pair that the exact test keeps (the slack s covers
// the rounding of the distances, as in the scan). An infinite table entry is staged as a NaN, which
// no comparison excludes, as pivot_excludes never excludes it.
#include "cuda/metric/sss_batched.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cpp/core/error.h"
#include "cuda/core/error.h"
#include "cuda/metric/scan_tests.cuh"
#include "cuda/metric/vector_distance.cuh"

namespace quiver::gpu::metric_space {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpLanes;
// A block's tile; round 1 gives each warp 32 queries (a lane each) and 32 rows.
constexpr int kTileQueries = 64;
constexpr int kTileRows = 128;
constexpr int kQueryGroups = kTileQueries / kWarpLanes;
static_assert(kQueryGroups * (kTileRows / kWarpLanes) == kWarps, "round 1 takes every warp once");
// A listed pair is (query << kRowBits) | row, 16 bits; the list holds every pair of the tile.
constexpr int kRowBits = 7;
constexpr int kTilePairs = kTileQueries * kTileRows;
static_assert(kTileRows == 1 << kRowBits && kTilePairs <= 65536, "pairs fit 16 bits");
// Pivots of round 1, of rounds 1-2 (kept intervals), and staged (rounds 1-3). Shared memory: the
// rows' distances 16 KiB, the queries' 8.3 KiB, the intervals 6.5 KiB, the list 16 KiB: within the
// 48 KiB of static shared memory, four blocks an SM.
constexpr int kFirstPivots = 4;
constexpr int kIntervalPivots = 12;
constexpr int kStagedPivots = 32;
constexpr int kRowsPerLoad = 4;  // round 1 reads a float4 of rows
// A padding column: a warp's lanes writing one query's pivots, or reading one pivot of 32 queries,
// fall in different banks.
constexpr int kPad = 1;
// Blocks an SM holds (their shared memory allows four), so at most 64 registers a thread.
constexpr int kBlocksPerSm = 4;
// Round 3: pivots beyond the staged ones whose loads are in flight together.
constexpr int kPivotBatch = 8;
// Fewer queries than this take the one-block-per-query scan, which splits each query over blocks
// (a tile of a few queries would leave most of round 1's lanes idle).
constexpr int64_t kMinBatchedQueries = 16;

__device__ __forceinline__ float positive_infinity() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float not_a_number() { return __int_as_float(0x7fffffff); }
// A table entry as staged: an infinite one as a NaN, which no interval comparison excludes.
__device__ __forceinline__ float staged_entry(float t) { return isinf(t) ? not_a_number() : t; }
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

// Block (x, y): rows x * kTileRows .., queries o = y * kTileQueries .. (of 0 .. queries-1).
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    sss_batched_kernel(ScanArgs a, int64_t queries, SlackFactors factors) {
  __shared__ __align__(16) float row_pivots[kStagedPivots][kTileRows];       // d(row, pivot)
  __shared__ float query_pivots[kTileQueries][kStagedPivots + kPad];         // d(query, pivot)
  __shared__ float2 intervals[kTileQueries][kIntervalPivots + kPad];         // [lo, hi] kept
  __shared__ uint16_t pairs[kTilePairs];
  __shared__ int64_t query_slot[kTileQueries];  // the slot of query q (its pivot distances, its vector)
  __shared__ int counts[3];                      // the pairs alive after rounds 1, 2, 3
  __shared__ unsigned evaluated[kTileQueries];  // distances computed per query

  const int tid = int(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int64_t row0 = int64_t(blockIdx.x) * kTileRows;
  const int64_t first_query = int64_t(blockIdx.y) * kTileQueries;  // o of the tile's query 0
  const int64_t pivots = a.pivots;
  const int staged = int(pivots < kStagedPivots ? pivots : kStagedPivots);
  const float radius = a.radius;

  if (tid < kTileQueries) {
    const int64_t o = first_query + tid;
    query_slot[tid] = o < queries ? (a.block_slot != nullptr ? a.block_slot[o] : o) : 0;
    evaluated[tid] = 0;
  }
  if (tid < 3) counts[tid] = 0;
  __syncthreads();

  // The staged pivots. Beyond the last pivot (or the last row, or query): t = 0 and an interval
  // that keeps everything. A thread stages four rows of one pivot (a float4 where the tile is whole
  // and the table's rows are 16-byte aligned), then a quarter of one query's pivots.
  {
    constexpr int kRowQuads = kTileRows / 4;
    static_assert(kStagedPivots * kRowQuads % kThreads == 0, "every thread stages the same number of quads");
    const bool whole = row0 + kTileRows <= a.rows && a.rows % 4 == 0 && reinterpret_cast<uintptr_t>(a.table) % 16 == 0;
    const float* tile_table = a.table + row0;
    for (int i = tid; i < kStagedPivots * kRowQuads; i += kThreads) {
      const int p = i / kRowQuads, r = (i % kRowQuads) * 4;
      float4 t = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (p < staged) {
        const float* from = tile_table + int64_t(p) * a.rows + r;
        if (whole) {
          t = __ldg(reinterpret_cast<const float4*>(from));
        } else {
          const int64_t left = a.rows - (row0 + r);
          if (left > 0) t.x = __ldg(from);
          if (left > 1) t.y = __ldg(from + 1);
          if (left > 2) t.z = __ldg(from + 2);
          if (left > 3) t.w = __ldg(from + 3);
        }
        t = make_float4(staged_entry(t.x), staged_entry(t.y), staged_entry(t.z), staged_entry(t.w));
      }
      *reinterpret_cast<float4*>(&row_pivots[p][r]) = t;
    }
    static_assert(kThreads == kTileQueries * 4 && kStagedPivots % 4 == 0, "four threads a query");
    const int q = tid / 4, quarter = tid % 4;
    const bool known_query = first_query + q < queries;
    const float* pivot_row = a.pivot_distances + query_slot[q] * pivots;
    for (int p = quarter; p < kStagedPivots; p += 4) {
      const bool known = known_query && p < staged;
      const float d = known ? __ldg(pivot_row + p) : 0.0f;
      query_pivots[q][p] = d;
      if (p < kIntervalPivots) intervals[q][p] = known ? kept_interval(d, radius, factors) : everything();
    }
  }
  __syncthreads();

  // 1. Every pair against the first pivots: lane = query, 32 rows a warp.
  {
    const int query = (warp % kQueryGroups) * kWarpLanes + lane;
    const int first_row = (warp / kQueryGroups) * kWarpLanes;
    const int64_t row = row0 + first_row + lane;
    const unsigned usable = __ballot_sync(kAllLanes, row < a.rows && allowed(a, int32_t(row)));
    float lo[kFirstPivots], hi[kFirstPivots];
#pragma unroll
    for (int p = 0; p < kFirstPivots; ++p) {
      lo[p] = intervals[query][p].x;
      hi[p] = intervals[query][p].y;
    }
    unsigned alive = 0;
#pragma unroll
    for (int g = 0; g < kWarpLanes / kRowsPerLoad; ++g) {
      bool out[kRowsPerLoad] = {};
#pragma unroll
      for (int p = 0; p < kFirstPivots; ++p) {
        const float4 t = *reinterpret_cast<const float4*>(&row_pivots[p][first_row + kRowsPerLoad * g]);
        out[0] |= (t.x < lo[p]) | (t.x > hi[p]);
        out[1] |= (t.y < lo[p]) | (t.y > hi[p]);
        out[2] |= (t.z < lo[p]) | (t.z > hi[p]);
        out[3] |= (t.w < lo[p]) | (t.w > hi[p]);
      }
#pragma unroll
      for (int j = 0; j < kRowsPerLoad; ++j) alive |= unsigned(!out[j]) << (kRowsPerLoad * g + j);
    }
    alive &= usable;
    if (first_query + query >= queries) alive = 0;
    // The lane's pairs, in one run of the list: offsets by a scan over the warp.
    const int mine = __popc(alive);
    int inclusive = mine;
    for (int offset = 1; offset < kWarpLanes; offset *= 2) {
      const int up = __shfl_up_sync(kAllLanes, inclusive, offset);
      if (lane >= offset) inclusive += up;
    }
    int base = 0;
    if (lane == kWarpLanes - 1) base = atomicAdd(&counts[0], inclusive);
    int at = __shfl_sync(kAllLanes, base, kWarpLanes - 1) + inclusive - mine;
    const int head = (query << kRowBits) | first_row;
    while (alive != 0) {
      pairs[at++] = uint16_t(head | (__ffs(alive) - 1));
      alive &= alive - 1;
    }
  }
  __syncthreads();
  int count = counts[0];

  // 2. The next pivots' intervals.
  if (pivots > kFirstPivots) {
    for (int base = 0; base < count; base += kThreads) {  // the same trip count for every thread
      const int i = base + tid;
      const uint16_t pair = i < count ? pairs[i] : 0;
      __syncthreads();  // every pair of this pass read before the survivors are written over them
      bool keep = false;
      if (i < count) {
        const int q = pair >> kRowBits, r = pair & (kTileRows - 1);
        bool out = false;
#pragma unroll
        for (int p = kFirstPivots; p < kIntervalPivots; ++p) {
          const float2 kept = intervals[q][p];
          const float t = row_pivots[p][r];
          out |= (t < kept.x) | (t > kept.y);
        }
        keep = !out;
      }
      append(pairs, &counts[1], keep, pair, lane);
    }
    __syncthreads();
    count = counts[1];
  }

  // 3. The other staged pivots, then the rest of the table; a lane per pair.
  if (pivots > kIntervalPivots) {
    for (int base = 0; base < count; base += kThreads) {
      const int i = base + tid;
      const uint16_t pair = i < count ? pairs[i] : 0;
      __syncthreads();
      bool keep = false;
      if (i < count) {
        const int q = pair >> kRowBits, r = pair & (kTileRows - 1);
        keep = true;
        for (int p = kIntervalPivots; keep && p < staged; ++p)
          keep = !pivot_excludes(row_pivots[p][r], query_pivots[q][p], radius, a.slack);
        const float* table = a.table + row0 + r;
        const float* pivot = a.pivot_distances + query_slot[q] * pivots;
        for (int64_t p = kStagedPivots; keep && p < pivots; p += kPivotBatch) {
          float t[kPivotBatch], d[kPivotBatch];
#pragma unroll
          for (int b = 0; b < kPivotBatch; ++b) {
            t[b] = p + b < pivots ? __ldg(table + (p + b) * a.rows) : 0.0f;
            d[b] = p + b < pivots ? __ldg(pivot + p + b) : 0.0f;
          }
#pragma unroll
          for (int b = 0; b < kPivotBatch; ++b)
            if (p + b < pivots && pivot_excludes(t[b], d[b], radius, a.slack)) keep = false;
        }
      }
      append(pairs, &counts[2], keep, pair, lane);
    }
    __syncthreads();
    count = counts[2];
  }

  // 4. The distances of the pairs left, a team of lanes each.
  const int team = a.team, teams = kWarpLanes / team, my_team = lane / team, member = lane % team;
  for (int first = warp * teams; first < count; first += kWarps * teams) {  // the same trip count in a warp
    const int j = first + my_team;
    const bool valid = j < count;
    const int pair = valid ? pairs[j] : 0;
    const int q = pair >> kRowBits;
    const int32_t row = int32_t(row0 + (pair & (kTileRows - 1)));
    const float d = vector_distance(a.metric, a.query_vectors + (a.query_base + query_slot[q]) * a.dim,
                                    a.vectors + int64_t(row) * a.dim, valid ? a.dim : 0, member, team);
    const bool counted = valid && member == 0;
    if (counted) atomicAdd(&evaluated[q], 1u);
    emit_hit(a, counted && d <= radius, first_query + q, row, d, lane);
  }
  __syncthreads();
  if (a.evaluations != nullptr && tid < kTileQueries && evaluated[tid] > 0)
    atomicAdd(a.evaluations + first_query + tid, static_cast<unsigned long long>(evaluated[tid]));
}

}  // namespace

bool sss_batched_applies(const MetricDevice& device, Prune prune, int64_t queries) {
  if (prune != Prune::sss || device.strings() || device.pivots == 0) return false;
  // QUIVER_SSS_BATCHED: 0 never (the one-block-per-query scan), 1 for any number of queries.
  const char* setting = std::getenv("QUIVER_SSS_BATCHED");
  if (setting != nullptr && std::strcmp(setting, "0") == 0) return false;
  if (setting != nullptr && std::strcmp(setting, "1") == 0) return true;
  return queries >= kMinBatchedQueries;
}

void sss_batched_range(const ScanArgs& args, int64_t queries, cudaStream_t stream) {
  require(args.dim > 0 && args.pivots > 0 && args.pivot_distances != nullptr && args.keys == nullptr &&
              args.hit_count != nullptr && args.radius_at == nullptr && args.row_list == nullptr &&
              args.stride_count == 0,
          "batched SSS scan: not a range scan of every row over vectors with pivots");
  if (queries == 0 || args.rows == 0) return;
  const int64_t row_tiles = (args.rows + kTileRows - 1) / kTileRows;
  const int64_t query_tiles = (queries + kTileQueries - 1) / kTileQueries;
  require(query_tiles <= 65535, "batched SSS scan: ", queries, " queries in one launch");
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(query_tiles));
  const double s = args.slack;
  const SlackFactors factors{(1.0 - s) / (1.0 + s), (1.0 + s) / (1.0 - s)};
  sss_batched_kernel<<<grid, kThreads, 0, stream>>>(args, queries, factors);
  QV_LAUNCH_CHECK("sss_batched_kernel");
}

}  // namespace quiver::gpu::metric_space
