// The small batch's SGEMM pass in one read of the base (gemv_select.h).
#include "cuda/flat/gemv_select.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "cpp/core/error.h"
#include "cuda/core/error.h"
#include "cuda/flat/certify.cuh"
#include "cuda/flat/half_rows.h"
#include "cuda/select/block_merge.cuh"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu {

namespace {

using Lanes = WarpLanes<int32_t>;
constexpr int32_t kNone = SentinelValue<int32_t>::value;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
// A row's products are split over four lanes: two shuffle additions a key, and a warp reads eight
// rows at once, 64 contiguous bytes of each per load.
constexpr int kLanesPerRow = 4;
constexpr int kRowsPerStep = kWarpSize / kLanesPerRow;
// A warp takes at least this many rows: its queues fill over the first kc ln(rows / kc) or so, which
// a short share would spend most of its rows on.
constexpr int64_t kMinRowsPerWarp = 256;
// Shared memory for the queries (16 KB): NQ x dim floats.
constexpr int64_t kMaxQueryFloats = 4096;
// The merge: a block of this many threads per query, each loading this many candidates at once
// (a round trip to L2 for all of them, not one per candidate).
constexpr int kMergeThreads = 1024;
constexpr int kMergeWarps = kMergeThreads / kWarpSize;
constexpr int kMergeLoads = 8;
// L2 lines, for the prefetch of the candidates' rows.
constexpr int kLineBytes = 128;

// Thread queue lengths of the selection's buckets (select_buckets.h): 2 up to 32, 3 up to 64.
template <int KR>
constexpr int kThreadQueue = KR == 1 ? 2 : 3;

// Queries padded to the kernel's count: 1, 2 or 4.
int64_t padded_queries(int64_t nq) { return nq <= 1 ? 1 : nq <= 2 ? 2 : 4; }

// Loads a lane keeps in flight per row: a quarter of a 128-float row, so that a step of such rows is
// one round trip to memory whatever the queries.
constexpr int kLoadsPerLane = 8;

__device__ __forceinline__ bool allowed(const uint8_t* filter, int64_t bits, int64_t row) {
  return row < bits && ((__ldg(filter + (row >> 3)) >> (row & 7)) & 1);
}

// Lowers a queue's limit to t (select_kernel.cuh's clamp_limit): keys equal to t still pass.
template <class WS>
__device__ __forceinline__ void clamp_limit(WS& ws, float t) {
  if (t < ws.limit_k || (t == ws.limit_k && ws.limit_v == kNone)) {
    ws.limit_k = t;
    ws.limit_v = kNone;
  }
}

// How a lane reads its share of a row: floats (dim not a multiple of 4, or rows not 16-byte
// aligned), float4s in chunks of kLoadsPerLane, or (kShort: rows of at most one chunk a lane, up to
// 128 floats, few queries) its whole share at once, the next step's loads issued before this step's
// keys are formed and offered, so that a warp always has bytes in flight. kHalf: 16-bit rows
// (half_rows.h), groups of 8 values in 16-byte loads, as kShort for one query.
enum class Layout { kFloats, kFloat4, kShort, kHalf };

// Rows read with two register sets taking turns (the next step's loads in flight while this step's
// keys are formed): kShort, and kHalf for one query (two queries so read 1M x 128 half rows in 175
// us against the float rows' 163; H200).
template <int NQ, Layout L>
constexpr bool kTwoRegisterSets = L == Layout::kShort || (L == Layout::kHalf && NQ == 1);

// Blocks a multiprocessor must hold, which caps the registers: 80 a thread for one or two queries
// read a step at a time (24 warps with bytes in flight), 128 for four queries and for two register
// sets.
template <int NQ, Layout L>
constexpr int kMinBlocks = NQ <= 2 && !kTwoRegisterSets<NQ, L> ? 3 : 2;

// The chunks c = c0, c0 + 4, ... (kLoads of them, those below `chunks`) of a row: float4s, or
// uint4s of 8 half values; zeros elsewhere and for an invalid row (nothing read).
template <typename Chunk, int kLoads>
__device__ __forceinline__ void load_chunk(const Chunk* row, bool valid, int c0, int chunks, Chunk (&v)[kLoads]) {
#pragma unroll
  for (int u = 0; u < kLoads; ++u) {
    const int c = c0 + kLanesPerRow * u;
    v[u] = valid && c < chunks ? __ldg(row + c) : Chunk{};
  }
}

// acc[q] += the products of a chunk loaded by load_chunk with query q (x4: the queries, dim4 float4s
// each, in shared memory). Each lane sums its products in order (certify.h's model: any order).
template <int NQ, int kLoads>
__device__ __forceinline__ void multiply_chunk(const float4 (&v)[kLoads], int c0, int dim4, const float4* x4,
                                               float (&acc)[NQ]) {
#pragma unroll
  for (int u = 0; u < kLoads; ++u) {
    const int c = c0 + kLanesPerRow * u;
    if (c < dim4) {
#pragma unroll
      for (int q = 0; q < NQ; ++q) {
        const float4 x = x4[q * dim4 + c];
        acc[q] = fmaf(v[u].x, x.x, acc[q]);
        acc[q] = fmaf(v[u].y, x.y, acc[q]);
        acc[q] = fmaf(v[u].z, x.z, acc[q]);
        acc[q] = fmaf(v[u].w, x.w, acc[q]);
      }
    }
  }
}

// The same for chunks of 8 half values (16-bit rows, half_rows.h: dim8 = dim / 8 chunks a row),
// each value widened to float exactly.
template <int NQ, int kLoads>
__device__ __forceinline__ void multiply_chunk(const uint4 (&v)[kLoads], int c0, int dim8, const float4* x4,
                                               float (&acc)[NQ]) {
  const int dim4 = 2 * dim8;
#pragma unroll
  for (int u = 0; u < kLoads; ++u) {
    const int c = c0 + kLanesPerRow * u;
    if (c < dim8) {
      const __half2* h = reinterpret_cast<const __half2*>(&v[u]);
      float y[8];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __half22float2(h[i]);
        y[2 * i] = f.x;
        y[2 * i + 1] = f.y;
      }
#pragma unroll
      for (int q = 0; q < NQ; ++q) {
        const float4 a = x4[q * dim4 + 2 * c], b = x4[q * dim4 + 2 * c + 1];
        acc[q] = fmaf(y[0], a.x, acc[q]);
        acc[q] = fmaf(y[1], a.y, acc[q]);
        acc[q] = fmaf(y[2], a.z, acc[q]);
        acc[q] = fmaf(y[3], a.w, acc[q]);
        acc[q] = fmaf(y[4], b.x, acc[q]);
        acc[q] = fmaf(y[5], b.y, acc[q]);
        acc[q] = fmaf(y[6], b.z, acc[q]);
        acc[q] = fmaf(y[7], b.w, acc[q]);
      }
    }
  }
}

// acc[q] += the products of this lane's share of a row (elements c = sub, sub + 4, ...; float4s or
// floats) with query q in shared memory. `valid`: the row exists (else nothing is read).
template <int NQ, Layout L>
__device__ __forceinline__ void row_products(const float* row, bool valid, int dim, int sub, const float* xs,
                                             float (&acc)[NQ]) {
  constexpr int kLoads = kLoadsPerLane;
  if constexpr (L != Layout::kFloats) {
    const int dim4 = dim / 4;
    for (int c0 = sub; c0 < dim4; c0 += kLanesPerRow * kLoads) {
      float4 v[kLoads];
      load_chunk(reinterpret_cast<const float4*>(row), valid, c0, dim4, v);
      multiply_chunk(v, c0, dim4, reinterpret_cast<const float4*>(xs), acc);
    }
  } else {
    for (int c0 = sub; c0 < dim; c0 += kLanesPerRow * kLoads) {
      float v[kLoads];
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int c = c0 + kLanesPerRow * u;
        v[u] = valid && c < dim ? __ldg(row + c) : 0.f;
      }
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int c = c0 + kLanesPerRow * u;
        if (c < dim) {
#pragma unroll
          for (int q = 0; q < NQ; ++q) acc[q] = fmaf(v[u], xs[q * dim + c], acc[q]);
        }
      }
    }
  }
}

// Joins the four lanes' sums of a row (every lane then holds them: the additions commute) and offers
// the row's keys to the queues of the nq real queries. Every lane of the warp calls it.
template <int NQ, class WS>
__device__ __forceinline__ void offer_row(WS (&ws)[NQ], float (&acc)[NQ], int64_t row, bool offers, float norm,
                                          bool l2, int nq, const uint8_t* filter, int64_t filter_bits) {
#pragma unroll
  for (int q = 0; q < NQ; ++q) {
    acc[q] += __shfl_xor_sync(kFullWarp, acc[q], 1);
    acc[q] += __shfl_xor_sync(kFullWarp, acc[q], 2);
  }
#pragma unroll
  for (int q = 0; q < NQ; ++q) {
    if (q >= nq) break;  // the same in every lane
    // The selection's key of the SGEMM pass: bias + (-2 <x, y>) in one rounding, or -<x, y>.
    float key = l2 ? fmaf(-2.f, acc[q], norm) : -acc[q];
    int32_t id = static_cast<int32_t>(row);
    if (!offers || !(key == key)) {  // NaN keys never enter a queue
      key = kSentinelKey;
      id = kNone;
    }
    if (filter != nullptr && ws[q].accepts(key, id) && !allowed(filter, filter_bits, row)) {
      key = kSentinelKey;
      id = kNone;
    }
    if (ws[q].insert(key, id)) ws[q].merge_thread_queues();
  }
}

// NQ queries (nq of them real) against the base: each warp takes steps of kRowsPerStep rows, a
// queue per query; then the block's queues merged and its kc best per
// query written at block_keys / block_rows [q][block][0 .. kc).
template <int NQ, int KR, Layout L>
__global__ void __launch_bounds__(kThreads, (kMinBlocks<NQ, L>))
    gemv_select_kernel(const float* __restrict__ queries, int nq, const float* __restrict__ base,
                       const __half* __restrict__ half_base, const float* __restrict__ norms, int64_t n, int dim,
                       int kc, const uint8_t* filter,
                       int64_t filter_bits, float* block_keys, int32_t* block_rows, float* block_norms_max) {
  constexpr int K = KR * kWarpSize;
  constexpr int kLoads = kLoadsPerLane;
  extern __shared__ __align__(16) float xs[];  // NQ x dim, zeros past the nq real queries
  __shared__ float merge_keys[kWarps * K];
  __shared__ int32_t merge_rows[kWarps * K];
  __shared__ float warp_norms_max[kWarps];
  for (int i = threadIdx.x; i < NQ * dim; i += kThreads) xs[i] = i < nq * dim ? queries[i] : 0.f;
  __syncthreads();

  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int sub = lane % kLanesPerRow;
  // Steps of kRowsPerStep rows go to the grid's warps in turn, so that at any time the whole grid
  // reads one window of the base (contiguous slices per warp, thousands of streams at once, read
  // 3.2 TB/s on an H200).
  const int64_t stride = int64_t(gridDim.x) * kWarps * kRowsPerStep;
  const int64_t first = (int64_t(blockIdx.x) * kWarps + warp) * kRowsPerStep;
  const bool l2 = norms != nullptr;
  // This lane's row of a step (the same trip count in every lane); one lane of its four offers it.
  auto row_of = [&](int64_t step) { return step + lane / kLanesPerRow; };
  auto norm_of = [&](int64_t row) { return l2 && row < n && sub == 0 ? __ldg(norms + row) : 0.f; };
  // The largest norm this thread read (NaN counts as 0, as in certify.cu's norms_max_kernel).
  float norms_max = 0.f;

  WarpSelect<Lanes, KR, kThreadQueue<KR>> ws[NQ];
#pragma unroll
  for (int q = 0; q < NQ; ++q) ws[q].reset(kc);

  const float4* x4 = reinterpret_cast<const float4*>(xs);
  if constexpr (kTwoRegisterSets<NQ, L>) {
    // Two register sets take turns: a step's rows are read while the previous step's are used.
    using Chunk = std::conditional_t<L == Layout::kHalf, uint4, float4>;
    const int chunks = L == Layout::kHalf ? dim / 8 : dim / 4;
    const Chunk* rows = L == Layout::kHalf ? reinterpret_cast<const Chunk*>(half_base)
                                           : reinterpret_cast<const Chunk*>(base);
    Chunk a[kLoads], b[kLoads];
    float norm_a = norm_of(row_of(first)), norm_b = 0.f;
    load_chunk(rows + row_of(first) * chunks, row_of(first) < n, sub, chunks, a);
    auto use = [&](int64_t step, const Chunk(&v)[kLoads], float norm) {
      float acc[NQ];
#pragma unroll
      for (int q = 0; q < NQ; ++q) acc[q] = 0.f;
      multiply_chunk(v, sub, chunks, x4, acc);
      const int64_t row = row_of(step);
      norms_max = fmaxf(norms_max, norm);
      offer_row(ws, acc, row, row < n && sub == 0, norm, l2, nq, filter, filter_bits);
    };
    for (int64_t step = first; step < n; step += 2 * stride) {
      const int64_t second = step + stride;
      norm_b = norm_of(row_of(second));
      load_chunk(rows + row_of(second) * chunks, row_of(second) < n, sub, chunks, b);
      use(step, a, norm_a);
      if (second >= n) break;
      const int64_t third = second + stride;
      norm_a = norm_of(row_of(third));
      load_chunk(rows + row_of(third) * chunks, row_of(third) < n, sub, chunks, a);
      use(second, b, norm_b);
    }
  } else {
    for (int64_t step = first; step < n; step += stride) {
      const int64_t row = row_of(step);
      const bool valid = row < n;
      const float norm = norm_of(row);
      float acc[NQ];
#pragma unroll
      for (int q = 0; q < NQ; ++q) acc[q] = 0.f;
      if constexpr (L == Layout::kHalf) {  // two to four queries: one register set, half as long (no spills)
        constexpr int kHalfLoads = kLoads / 2;
        const int dim8 = dim / 8;
        for (int c0 = sub; c0 < dim8; c0 += kLanesPerRow * kHalfLoads) {
          uint4 v[kHalfLoads];
          load_chunk(reinterpret_cast<const uint4*>(half_base) + row * dim8, valid, c0, dim8, v);
          multiply_chunk(v, c0, dim8, x4, acc);
        }
      } else {
        row_products<NQ, L>(base + row * dim, valid, dim, sub, xs, acc);
      }
      norms_max = fmaxf(norms_max, norm);
      offer_row(ws, acc, row, valid && sub == 0, norm, l2, nq, filter, filter_bits);
    }
  }
  if (block_norms_max != nullptr) {  // the same in every thread
#pragma unroll
    for (int d = kWarpSize / 2; d > 0; d /= 2) norms_max = fmaxf(norms_max, __shfl_xor_sync(kFullWarp, norms_max, d));
    if (lane == 0) warp_norms_max[warp] = norms_max;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kWarps; ++w) norms_max = fmaxf(norms_max, warp_norms_max[w]);
      block_norms_max[blockIdx.x] = norms_max;
    }
  }

  // The block's queues, query by query (every thread takes part: the merge has barriers).
#pragma unroll
  for (int q = 0; q < NQ; ++q) {
    if (q >= nq) break;
    ws[q].finish();
    detail::merge_block_queues(ws[q], merge_keys, merge_rows, warp, warp, kWarps, lane);
    if (warp == 0) {
      const int64_t out = (int64_t(q) * gridDim.x + blockIdx.x) * kc;
#pragma unroll
      for (int r = 0; r < KR; ++r) {
        const int e = r * kWarpSize + lane;
        if (e < kc) {
          block_keys[out + e] = ws[q].wk[r];
          block_rows[out + e] = ws[q].wv[r];
        }
      }
    }
  }
}

// A (key, row) pair as one integer that orders as the pair does (keys ascending, then rows; the
// sentinel (+inf, kNone) last). Keys are never NaN.
__device__ __forceinline__ uint64_t ordered_pair(float key, int32_t row) {
  const uint32_t bits = __float_as_uint(key);
  const uint32_t ordered = bits & 0x80000000u ? ~bits : bits | 0x80000000u;
  return uint64_t(ordered) << 32 | uint32_t(row);
}

__device__ __forceinline__ float pair_key(uint64_t pair) {
  const uint32_t ordered = uint32_t(pair >> 32);
  return __uint_as_float(ordered & 0x80000000u ? ordered & 0x7fffffffu : ~ordered);
}

__device__ __forceinline__ int32_t pair_row(uint64_t pair) { return int32_t(uint32_t(pair)); }

// The merge's side jobs, the certificate's statistics (certify.h), computed here so that a small
// batch's search has no statistics kernels to wait for: query q's (||x||^2, r_x^2) into
// query_stats[2q ..] (queries nq x dim; vec4: 16-byte loads), and from the GEMV blocks' largest
// norms the base's two numbers (max ||y||^2 * norms_scale, 0). Null pointers: not wanted.
struct MergeStats {
  const float* queries = nullptr;
  int64_t dim = 0;
  bool vec4 = false;
  double* query_stats = nullptr;
  const float* block_norms_max = nullptr;
  float norms_scale = 1.f;
  unsigned* base_stats = nullptr;
};

__device__ void merge_side_jobs(const MergeStats& st, int blocks) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int q = blockIdx.x;
  if (warp == 0 && st.query_stats != nullptr) {
    // Lanes 0-3 read the row; the others add zeros (row_sums' shuffles need the whole warp).
    const int64_t nq = gridDim.x;
    double ss, rr;
    row_sums(st.queries, nq, st.dim, st.vec4, lane < kStatsLanesPerRow ? q : nq, lane % kStatsLanesPerRow, &ss, &rr);
    if (lane == 0) {
      st.query_stats[2 * q] = ss;
      st.query_stats[2 * q + 1] = rr;
    }
  }
  if (warp == 1 && q == 0 && st.base_stats != nullptr) {
    float m = 0.f;
    for (int b = lane; b < blocks; b += kWarpSize) m = fmaxf(m, st.block_norms_max[b]);
#pragma unroll
    for (int d = kWarpSize / 2; d > 0; d /= 2) m = fmaxf(m, __shfl_xor_sync(kFullWarp, m, d));
    if (lane == 0) {
      st.base_stats[0] = upper_bits(double(m) * st.norms_scale);
      st.base_stats[1] = 0;
    }
  }
}

// Query blockIdx.x: the kc best of its blocks' lists (blocks x kc, each sorted) into out_keys /
// out_rows (kc), then the candidates' rows of rerank_base prefetched into L2 for the finish stage.
//
// Every one of the kc best is at or under a bound: the kc-th smallest of the lists' first entries
// (the first kc of them are kc distinct candidates), and the kc-th entry of any full list. With as
// many lists as threads, the merge counts: it ranks the first entries (each against all, in shared
// memory) for the first bound, gathers from each list the entries at or under the bound (about kc
// of them: the bound is tight), and writes each gathered entry at its rank among them. No queue, no
// chain of shuffles (the queues' merge took 14 us for k = 10 over 1M rows on an H200: the looser
// second bound alone let about 4 000 of the 6 900 candidates in). Where the lists or the gathered
// entries are more than the threads, the queues merge every candidate under the bound's key (the
// second bound alone when the lists are more than the threads).
template <int KR>
__global__ void __launch_bounds__(kMergeThreads)
    gemv_merge_kernel(const float* __restrict__ block_keys, const int32_t* __restrict__ block_rows, int blocks, int kc,
                      float* out_keys, int32_t* out_rows, const float* rerank_base, int64_t dim, MergeStats stats) {
  constexpr int K = KR * kWarpSize;
  __shared__ float merge_keys[kMergeWarps * K];
  __shared__ int32_t merge_rows[kMergeWarps * K];
  __shared__ uint64_t pairs[kMergeThreads];  // the lists' first entries, then the gathered entries
  __shared__ uint64_t warp_bounds[kMergeWarps];
  __shared__ int gathered;
  const int q = blockIdx.x;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int64_t count = int64_t(blocks) * kc;
  const float* keys = block_keys + q * count;
  const int32_t* rows = block_rows + q * count;
  const uint64_t sentinel = ordered_pair(kSentinelKey, kNone);
  merge_side_jobs(stats, blocks);

  // The second bound, from this thread's list (threads past the lists: none).
  const int b = threadIdx.x;
  uint64_t head = sentinel, bound = sentinel;
  if (b < blocks) {
    head = ordered_pair(keys[int64_t(b) * kc], rows[int64_t(b) * kc]);
    const int64_t last = int64_t(b) * kc + kc - 1;
    if (rows[last] != kNone) bound = ordered_pair(keys[last], rows[last]);
  }
  const bool counted = blocks <= kMergeThreads;  // the same in every thread
  if (counted) {
    if (b < blocks) pairs[b] = head;
    if (threadIdx.x == 0) gathered = 0;
    __syncthreads();
    // The first bound: the first entry with kc - 1 smaller ones (valid entries are distinct).
    if (head != sentinel) {
      int smaller = 0;
      for (int j = 0; j < blocks; ++j) smaller += pairs[j] < head;
      if (smaller == kc - 1) bound = min(bound, head);
    }
  }
#pragma unroll
  for (int d = kWarpSize / 2; d > 0; d /= 2) bound = min(bound, __shfl_xor_sync(kFullWarp, bound, d));
  if (lane == 0) warp_bounds[warp] = bound;
  __syncthreads();
  for (int i = 0; i < kMergeWarps; ++i) bound = min(bound, warp_bounds[i]);

  int n_gathered = kMergeThreads + 1;
  if (counted) {
    // Each list's entries at or under the bound: a prefix of it.
    if (b < blocks && head <= bound && head != sentinel) {
      for (int e = 0; e < kc; ++e) {
        const int64_t i = int64_t(b) * kc + e;
        const uint64_t pair = ordered_pair(keys[i], rows[i]);
        if (rows[i] == kNone || pair > bound) break;
        const int at = atomicAdd(&gathered, 1);
        if (at < kMergeThreads) pairs[at] = pair;
      }
    }
    __syncthreads();
    n_gathered = gathered;
  }
  if (n_gathered <= kMergeThreads) {
    // Each gathered entry at its rank; fewer than kc: every allowed row was gathered, the rest is
    // the sentinel.
    if (threadIdx.x < n_gathered) {
      const uint64_t mine = pairs[threadIdx.x];
      int rank = 0;
      for (int j = 0; j < n_gathered; ++j) rank += pairs[j] < mine;
      if (rank < kc) {
        merge_keys[rank] = pair_key(mine);
        merge_rows[rank] = pair_row(mine);
      }
    }
    for (int e = n_gathered + threadIdx.x; e < kc; e += kMergeThreads) {
      merge_keys[e] = kSentinelKey;
      merge_rows[e] = kNone;
    }
    __syncthreads();
  } else {
    // The queues, over every candidate at or under the bound's key.
    const float bound_key = pair_key(bound);
    WarpSelect<Lanes, KR, kThreadQueue<KR>> ws;
    ws.reset(kc);
    clamp_limit(ws, bound_key);
    float ck[kMergeLoads];
    int32_t cr[kMergeLoads];
    for (int64_t first = 0; first < count; first += int64_t(kMergeLoads) * kMergeThreads) {
#pragma unroll
      for (int u = 0; u < kMergeLoads; ++u) {
        const int64_t i = first + int64_t(u) * kMergeThreads + threadIdx.x;
        ck[u] = i < count ? keys[i] : kSentinelKey;
        cr[u] = i < count ? rows[i] : kNone;
      }
#pragma unroll
      for (int u = 0; u < kMergeLoads; ++u) {
        if (ws.insert(ck[u], cr[u])) {
          ws.merge_thread_queues();
          clamp_limit(ws, bound_key);
        }
      }
    }
    ws.finish();
    // Afterwards slot 0 of merge_keys / merge_rows holds the result, in element order.
    detail::merge_block_queues(ws, merge_keys, merge_rows, warp, warp, kMergeWarps, lane);
  }
  for (int e = threadIdx.x; e < kc; e += kMergeThreads) {
    out_keys[int64_t(q) * kc + e] = merge_keys[e];
    out_rows[int64_t(q) * kc + e] = merge_rows[e];
  }
  if (rerank_base != nullptr) {
    // Every line of each candidate's row: one address a line from its start, and its last float.
    const int64_t bytes = dim * int64_t(sizeof(float));
    const int lines = static_cast<int>((bytes + kLineBytes - 1) / kLineBytes) + 1;
    for (int j = threadIdx.x; j < kc * lines; j += kMergeThreads) {
      const int32_t row = merge_rows[j / lines];
      if (row == kNone) continue;
      const int l = j % lines;
      const char* start = reinterpret_cast<const char*>(rerank_base + int64_t(row) * dim);
      const char* at = l + 1 < lines ? start + int64_t(l) * kLineBytes : start + bytes - sizeof(float);
      asm volatile("prefetch.global.L2 [%0];" ::"l"(at));
    }
  }
}

// Blocks of one kernel a multiprocessor holds (with the most shared memory the queries take),
// asked once per device.
template <int NQ, int KR, Layout L>
int resident_blocks() {
  constexpr int kDevices = 64;
  static std::atomic<int> by_device[kDevices];
  int device = 0;
  QV_CUDA_CHECK(cudaGetDevice(&device));
  int resident = device < kDevices ? by_device[device].load(std::memory_order_relaxed) : 0;
  if (resident == 0) {
    QV_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, gemv_select_kernel<NQ, KR, L>, kThreads,
                                                                kMaxQueryFloats * sizeof(float)));
    resident = std::max(resident, 1);
    if (device < kDevices) by_device[device].store(resident, std::memory_order_relaxed);
  }
  return resident;
}

template <int NQ, int KR, Layout L>
struct Variant {
  static int resident() { return resident_blocks<NQ, KR, L>(); }
  static void launch(int64_t blocks, const float* queries, int64_t nq, const float* base, const __half* half_base,
                     const float* norms, int64_t n, int64_t dim, int64_t kc, const uint8_t* filter,
                     int64_t filter_bits, float* block_keys, int32_t* block_rows, float* block_norms_max,
                     cudaStream_t stream) {
    const size_t shared = size_t(NQ * dim) * sizeof(float);
    gemv_select_kernel<NQ, KR, L><<<static_cast<unsigned>(blocks), kThreads, shared, stream>>>(
        queries, static_cast<int>(nq), base, half_base, norms, n, static_cast<int>(dim), static_cast<int>(kc), filter,
        filter_bits, block_keys, block_rows, block_norms_max);
    QV_LAUNCH_CHECK("gemv_select_kernel");
  }
};

// The layout for rows of dim floats at `base`: kShort needs one chunk a lane, and few queries (two
// chunks in registers). It read 1M x 128 floats in 158 us against kFloat4's 165 (one query; two:
// 172 against 189; H200, the kernel pair).
// Half rows (half_base given) have a layout of their own.
Layout layout_for(const float* base, const __half* half_base, int64_t nq, int64_t dim) {
  if (half_base != nullptr) return Layout::kHalf;
  if (dim % 4 != 0 || (reinterpret_cast<uintptr_t>(base) & 15) != 0) return Layout::kFloats;
  return padded_queries(nq) <= 2 && dim <= 4 * kLanesPerRow * kLoadsPerLane ? Layout::kShort : Layout::kFloat4;
}

// Calls f(Variant<NQ, KR, L>{}) for the shape's kernel.
template <class F>
auto dispatch(int64_t nq, int64_t kc, Layout layout, F&& f) {
  auto by_layout = [&](auto nq_tag, auto kr_tag) {
    constexpr int NQ = decltype(nq_tag)::value, KR = decltype(kr_tag)::value;
    if constexpr (NQ <= 2) {
      if (layout == Layout::kShort) return f(Variant<NQ, KR, Layout::kShort>{});
    }
    if (layout == Layout::kHalf) return f(Variant<NQ, KR, Layout::kHalf>{});
    return layout == Layout::kFloats ? f(Variant<NQ, KR, Layout::kFloats>{}) : f(Variant<NQ, KR, Layout::kFloat4>{});
  };
  auto by_kr = [&](auto nq_tag) {
    return kc <= kWarpSize ? by_layout(nq_tag, std::integral_constant<int, 1>{})
                           : by_layout(nq_tag, std::integral_constant<int, 2>{});
  };
  switch (padded_queries(nq)) {
    case 1: return by_kr(std::integral_constant<int, 1>{});
    case 2: return by_kr(std::integral_constant<int, 2>{});
    default: return by_kr(std::integral_constant<int, 4>{});
  }
}

}  // namespace

bool gemv_select_fits(int64_t nq, int64_t dim, int64_t kc) {
  return nq >= 1 && nq <= kGemvSelectMaxQueries && kc >= 1 && kc <= kGemvSelectMaxK && dim >= 1 &&
         padded_queries(nq) * dim <= kMaxQueryFloats;
}

int64_t gemv_select_blocks(const SelectLimits& limits, int64_t nq, int64_t n, int64_t dim, int64_t kc,
                           bool half_rows) {
  // (For the aligned layout: an unaligned base's kernel holds about as many.)
  const Layout layout = half_rows ? Layout::kHalf : layout_for(nullptr, nullptr, nq, dim);
  const int resident = dispatch(nq, kc, layout, [](auto v) { return decltype(v)::resident(); });
  const int64_t wanted = (n + kWarps * kMinRowsPerWarp - 1) / (kWarps * kMinRowsPerWarp);
  return std::clamp<int64_t>(wanted, 1, int64_t(resident) * limits.sm_count);
}

void launch_gemv_select(const float* queries, int64_t nq, const float* base, const __half* half_base,
                        const float* base_norms, int64_t n, int64_t dim, int64_t kc, const uint8_t* filter,
                        int64_t filter_bits, int64_t blocks, float* block_keys, int32_t* block_rows, float* out_keys,
                        int32_t* out_rows, const float* rerank_base, const GemvStats& stats, cudaStream_t stream) {
  require(gemv_select_fits(nq, dim, kc), "gemv_select: nq = ", nq, ", dim = ", dim, ", kc = ", kc, " do not fit");
  require(half_base == nullptr || (half_rows_fit(dim) && (reinterpret_cast<uintptr_t>(half_base) & 15) == 0),
          "gemv_select: 16-bit rows of dim ", dim, " (or not 16-byte aligned)");
  require(blocks >= 1 && blocks <= (int64_t(1) << 20), "gemv_select: blocks = ", blocks);
  require(stats.base_stats == nullptr || (base_norms != nullptr && stats.block_norms_max != nullptr),
          "gemv_select: the base's statistics need its norms and the blocks' workspace");
  float* block_norms_max = stats.base_stats != nullptr ? stats.block_norms_max : nullptr;
  dispatch(nq, kc, layout_for(base, half_base, nq, dim), [&](auto v) {
    decltype(v)::launch(blocks, queries, nq, base, half_base, base_norms, n, dim, kc, filter, filter_bits, block_keys,
                        block_rows, block_norms_max, stream);
    return 0;
  });
  MergeStats merge;
  merge.queries = queries;
  merge.dim = dim;
  merge.vec4 = dim % 4 == 0 && (reinterpret_cast<uintptr_t>(queries) & 15) == 0;
  merge.query_stats = stats.query_stats;
  merge.block_norms_max = block_norms_max;
  merge.norms_scale = stats.norms_scale;
  merge.base_stats = stats.base_stats;
  const auto grid = static_cast<unsigned>(nq);
  const auto lists = static_cast<int>(blocks);
  if (kc <= kWarpSize) {
    gemv_merge_kernel<1><<<grid, kMergeThreads, 0, stream>>>(block_keys, block_rows, lists, static_cast<int>(kc),
                                                             out_keys, out_rows, rerank_base, dim, merge);
  } else {
    gemv_merge_kernel<2><<<grid, kMergeThreads, 0, stream>>>(block_keys, block_rows, lists, static_cast<int>(kc),
                                                             out_keys, out_rows, rerank_base, dim, merge);
  }
  QV_LAUNCH_CHECK("gemv_merge_kernel");
}

}  // namespace quiver::gpu
