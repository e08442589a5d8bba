#include "cuda/ivf_flat/flat_scan.h"

#include <algorithm>
#include <cstdint>

#include "cuda/core/error.h"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;
// The block's step: kQueries x kEntries distances, kDepth dimensions at a time; each of the 16 x 16
// threads owns a 4 x 4 sub-tile.
constexpr int kQueries = 64;
constexpr int kEntries = 64;
constexpr int kDepth = 32;
constexpr int kSub = 4;
constexpr int kPad = 4;  // keeps float4 rows aligned and spreads the transposed stores over banks
constexpr int kScanThreads = 1024;
// Resident blocks of the distance kernel per multiprocessor (256 threads, 18 KB of shared memory).
constexpr int64_t kBlocksPerSm = 8;
// Pairs (and lists) few enough for the one-block counting sort; its two per-list arrays fit in
// 48 KB of shared memory.
constexpr int64_t kSmallSortPairs = 8192;
constexpr int64_t kSmallSortLists = 6144;
// Up to this many queries per list on average, the direct kernel (no sort, no reuse) is faster.
constexpr int64_t kDirectPairsPerList = 2;

int64_t align_up(int64_t bytes) { return (bytes + 255) / 256 * 256; }

unsigned blocks_for(int64_t threads_needed) {
  return static_cast<unsigned>(std::clamp<int64_t>((threads_needed + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

__global__ void count_kernel(const int32_t* lists, int64_t pairs, int32_t* counts) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs; i += int64_t(gridDim.x) * blockDim.x)
    atomicAdd(counts + lists[i], 1);
}

// Exclusive prefix sum of value(i), i < n, into out[i] (and out_b[i] when given), out[n] = the
// total; by the whole block (kScanThreads threads).
template <typename Value>
__device__ void block_exclusive_scan(Value value, int64_t n, int32_t* out, int32_t* out_b) {
  __shared__ int32_t warp_sums[kScanThreads / 32];
  __shared__ int32_t carry;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  for (int64_t base = 0; base < n; base += kScanThreads) {
    const int64_t i = base + threadIdx.x;
    const int32_t v = i < n ? value(i) : 0;
    int32_t x = v;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int32_t y = __shfl_up_sync(0xffffffffu, x, d);
      if (lane >= d) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
      int32_t w = lane < kScanThreads / 32 ? warp_sums[lane] : 0;
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        const int32_t y = __shfl_up_sync(0xffffffffu, w, d);
        if (lane >= d) w += y;
      }
      if (lane < kScanThreads / 32) warp_sums[lane] = w;  // inclusive
    }
    __syncthreads();
    const int32_t before = carry + (warp > 0 ? warp_sums[warp - 1] : 0) + x - v;
    if (i < n) {
      out[i] = before;
      if (out_b != nullptr) out_b[i] = before;
    }
    __syncthreads();
    if (threadIdx.x == kScanThreads - 1) carry = before + v;
    __syncthreads();
  }
  if (threadIdx.x == 0) out[n] = carry;
  __syncthreads();
}

// Tiles of kEntries entries of list l that have queries to compute.
__device__ __forceinline__ int32_t tiles_of(int32_t pairs, int32_t size) {
  return pairs > 0 ? (size + kEntries - 1) / kEntries : 0;
}

// starts / cursor: where each list's pairs go; unit_start: each list's first (list, tile) unit.
__global__ void __launch_bounds__(kScanThreads) start_kernel(const int32_t* counts, const int32_t* sizes,
                                                             int64_t nlist, int32_t* starts, int32_t* cursor,
                                                             int32_t* unit_start) {
  block_exclusive_scan([&](int64_t i) { return counts[i]; }, nlist, starts, cursor);
  block_exclusive_scan([&](int64_t i) { return tiles_of(counts[i], sizes[i]); }, nlist, unit_start, nullptr);
}

__global__ void place_kernel(const int32_t* lists, int64_t pairs, int32_t* cursor, int32_t* sorted) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs; i += int64_t(gridDim.x) * blockDim.x)
    sorted[atomicAdd(cursor + lists[i], 1)] = static_cast<int32_t>(i);
}

// Each pair's segment in its query's row: the entries of the query's earlier probes.
__device__ __forceinline__ void segments_of(const int32_t* lists, int64_t q, int64_t nprobe, const int32_t* sizes,
                                            int32_t* seg) {
  int32_t running = 0;
  for (int64_t p = 0; p < nprobe; ++p) {
    seg[q * nprobe + p] = running;
    running += sizes[lists[q * nprobe + p]];
  }
}

__global__ void segments_kernel(const int32_t* lists, int64_t rows, int64_t nprobe, const int32_t* sizes,
                                int32_t* seg) {
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < rows; q += int64_t(gridDim.x) * blockDim.x)
    segments_of(lists, q, nprobe, sizes, seg);
}

// Everything above in one block, for few pairs (small batches): one launch instead of five.
__global__ void __launch_bounds__(kScanThreads) sort_small_kernel(const int32_t* lists, int64_t rows, int64_t nprobe,
                                                                  int64_t nlist, const int32_t* sizes, int32_t* counts,
                                                                  int32_t* starts, int32_t* unit_start,
                                                                  int32_t* sorted, int32_t* seg) {
  extern __shared__ int32_t local[];  // nlist counts, then nlist cursors
  int32_t* count = local;
  int32_t* cursor = local + nlist;
  const int64_t pairs = rows * nprobe;
  for (int64_t i = threadIdx.x; i < nlist; i += kScanThreads) count[i] = 0;
  __syncthreads();
  for (int64_t i = threadIdx.x; i < pairs; i += kScanThreads) atomicAdd(count + lists[i], 1);
  __syncthreads();
  block_exclusive_scan([&](int64_t i) { return count[i]; }, nlist, starts, cursor);
  block_exclusive_scan([&](int64_t i) { return tiles_of(count[i], sizes[i]); }, nlist, unit_start, nullptr);
  for (int64_t i = threadIdx.x; i < nlist; i += kScanThreads) counts[i] = count[i];
  for (int64_t i = threadIdx.x; i < pairs; i += kScanThreads) sorted[atomicAdd(cursor + lists[i], 1)] = int32_t(i);
  for (int64_t q = threadIdx.x; q < rows; q += kScanThreads) segments_of(lists, q, nprobe, sizes, seg);
}

__device__ __forceinline__ void distance_unit(const FlatScanParams& p, const int32_t* starts, const int32_t* counts,
                                              const int32_t* sorted, int64_t list, int64_t e0,
                                              float (*qs)[kQueries + kPad], float (*ys)[kEntries + kPad],
                                              int64_t* query_row, int64_t* out_at) {
  const int64_t size = p.list_size[list];
  const int32_t pairs = counts[list];
  const int ne = static_cast<int>(size - e0 < kEntries ? size - e0 : kEntries);
  const int64_t slot0 = int64_t(p.list_offset[list]) + e0;
  const float* y = p.vectors + slot0 * p.dim;
  const int tid = threadIdx.x;
  const int ty = tid / 16, tx = tid % 16;
  const int32_t first_pair = starts[list];

  for (int32_t g0 = 0; g0 < pairs; g0 += kQueries) {
    const int ng = min(kQueries, pairs - g0);
    if (tid < kQueries) {
      int64_t q = 0, at = 0;
      if (tid < ng) {
        const int32_t pair = sorted[first_pair + g0 + tid];
        q = pair / p.nprobe;
        at = q * p.row_stride + p.seg[pair] + e0;
      }
      query_row[tid] = q;
      out_at[tid] = at;
    }
    __syncthreads();
    // The next step's values are loaded into registers while the current step computes.
    constexpr int kLoads = kQueries * kDepth / kThreads;
    float q_next[kLoads], y_next[kLoads];
    auto load = [&](int64_t d0) {
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        const int idx = tid + i * kThreads;
        const int r = idx / kDepth, c = idx % kDepth;
        const int64_t d = d0 + c;
        q_next[i] = (r < ng && d < p.dim) ? __ldg(p.queries + query_row[r] * p.dim + d) : 0.f;
        y_next[i] = (r < ne && d < p.dim) ? __ldg(y + int64_t(r) * p.dim + d) : 0.f;
      }
    };
    float acc[kSub][kSub] = {};
    load(0);
    for (int64_t d0 = 0; d0 < p.dim; d0 += kDepth) {
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        const int idx = tid + i * kThreads;
        qs[idx % kDepth][idx / kDepth] = q_next[i];
        ys[idx % kDepth][idx / kDepth] = y_next[i];
      }
      __syncthreads();
      if (d0 + kDepth < p.dim) load(d0 + kDepth);
#pragma unroll
      for (int c = 0; c < kDepth; ++c) {
        const float4 a = *reinterpret_cast<const float4*>(&qs[c][ty * kSub]);
        const float4 b = *reinterpret_cast<const float4*>(&ys[c][tx * kSub]);
        const float av[4] = {a.x, a.y, a.z, a.w};
        const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int i = 0; i < kSub; ++i)
#pragma unroll
          for (int j = 0; j < kSub; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
      __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < kSub; ++i) {
      const int r = ty * kSub + i;
      if (r >= ng) continue;
      float* out = p.dist + out_at[r];
#pragma unroll
      for (int j = 0; j < kSub; ++j) {
        const int e = tx * kSub + j;
        if (e < ne) out[e] = p.l2 ? __ldg(p.norms + slot0 + e) - 2.f * acc[i][j] : -acc[i][j];
      }
    }
    __syncthreads();  // query_row / out_at are rewritten next
  }
}

// Few queries per list (small batches): nothing to reuse, so no sort; one block per (pair, tile of
// kDirectEntries entries), each warp computing kDirectPerWarp entries at once with its lanes across
// the dimensions, so many loads are in flight (a small batch is latency-bound).
constexpr int kDirectPerWarp = 4;
constexpr int kDirectEntries = kDirectPerWarp * (kThreads / 32);

__global__ void __launch_bounds__(kThreads) direct_distance_kernel(const FlatScanParams p, int64_t tiles, bool vec4) {
  const int64_t pair = blockIdx.x / tiles;
  const int64_t e0 = (blockIdx.x % tiles) * kDirectEntries;
  const int64_t q = pair / p.nprobe, probe = pair % p.nprobe;
  const int32_t* lists = p.lists + q * p.nprobe;
  const int32_t list = lists[probe];
  const int64_t size = p.list_size[list];
  if (e0 >= size) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  int32_t seg = 0;  // entries of the query's earlier probes
  for (int64_t i = lane; i < probe; i += 32) seg += p.list_size[lists[i]];
#pragma unroll
  for (int d = 16; d > 0; d /= 2) seg += __shfl_xor_sync(0xffffffffu, seg, d);
  const int64_t first = e0 + int64_t(warp) * kDirectPerWarp;
  const int64_t slot0 = int64_t(p.list_offset[list]) + first;
  const float* x = p.queries + q * p.dim;
  float acc[kDirectPerWarp] = {};
  if (vec4) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (int64_t c = lane; c < p.dim / 4; c += 32) {
      const float4 a = __ldg(x4 + c);
#pragma unroll
      for (int u = 0; u < kDirectPerWarp; ++u) {
        if (first + u < size) {
          const float4 b = __ldg(reinterpret_cast<const float4*>(p.vectors + (slot0 + u) * p.dim) + c);
          acc[u] = fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, acc[u]))));
        }
      }
    }
  } else {
    for (int64_t c = lane; c < p.dim; c += 32) {
      const float a = __ldg(x + c);
#pragma unroll
      for (int u = 0; u < kDirectPerWarp; ++u)
        if (first + u < size) acc[u] = fmaf(a, __ldg(p.vectors + (slot0 + u) * p.dim + c), acc[u]);
    }
  }
  float* out = p.dist + q * p.row_stride + seg;
#pragma unroll
  for (int u = 0; u < kDirectPerWarp; ++u) {
    float v = acc[u];
#pragma unroll
    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
    if (lane == 0 && first + u < size) out[first + u] = p.l2 ? __ldg(p.norms + slot0 + u) - 2.f * v : -v;
  }
}

// A persistent grid over the (list, tile) units that have queries: unit u belongs to the last list
// whose unit_start is at most u.
__global__ void __launch_bounds__(kThreads) distance_kernel(const FlatScanParams p, const int32_t* starts,
                                                            const int32_t* counts, const int32_t* sorted,
                                                            const int32_t* unit_start) {
  __shared__ __align__(16) float qs[kDepth][kQueries + kPad];
  __shared__ __align__(16) float ys[kDepth][kEntries + kPad];
  __shared__ int64_t query_row[kQueries];  // queries row index
  __shared__ int64_t out_at[kQueries];     // where the pair's segment of this tile starts in dist
  const int32_t units = unit_start[p.nlist];
  for (int32_t unit = blockIdx.x; unit < units; unit += gridDim.x) {
    int64_t lo = 0, hi = p.nlist - 1;
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (unit_start[mid] <= unit) lo = mid; else hi = mid - 1;
    }
    distance_unit(p, starts, counts, sorted, lo, int64_t(unit - unit_start[lo]) * kEntries, qs, ys, query_row, out_at);
  }
}

}  // namespace

int64_t flat_scan_workspace_bytes(int64_t rows, int64_t nprobe, int64_t nlist) {
  return 4 * align_up((nlist + 1) * 4) + align_up(rows * nprobe * 4);
}

void flat_scan(const FlatScanParams& p, void* workspace, cudaStream_t stream) {
  const int64_t pairs = p.rows * p.nprobe;
  if (pairs == 0 || p.max_list_size == 0) return;
  auto* base = static_cast<char*>(workspace);
  const int64_t part = align_up((p.nlist + 1) * 4);
  auto* counts = reinterpret_cast<int32_t*>(base);
  auto* starts = reinterpret_cast<int32_t*>(base + part);
  auto* cursor = reinterpret_cast<int32_t*>(base + 2 * part);
  auto* unit_start = reinterpret_cast<int32_t*>(base + 3 * part);
  auto* sorted = reinterpret_cast<int32_t*>(base + 4 * part);
  if (pairs <= kDirectPairsPerList * p.nlist) {
    const int64_t tiles = (p.max_list_size + kDirectEntries - 1) / kDirectEntries;
    // float4 loads when every row starts 16-byte aligned.
    const bool vec4 = p.dim % 4 == 0 && (reinterpret_cast<uintptr_t>(p.queries) & 15) == 0 &&
                      (reinterpret_cast<uintptr_t>(p.vectors) & 15) == 0;
    direct_distance_kernel<<<static_cast<unsigned>(pairs * tiles), kThreads, 0, stream>>>(p, tiles, vec4);
    QV_LAUNCH_CHECK("direct_distance_kernel");
    return;
  }
  if (pairs <= kSmallSortPairs && p.nlist <= kSmallSortLists) {
    sort_small_kernel<<<1, kScanThreads, size_t(2 * p.nlist) * 4, stream>>>(p.lists, p.rows, p.nprobe, p.nlist,
                                                                             p.list_size, counts, starts, unit_start,
                                                                             sorted, p.seg);
    QV_LAUNCH_CHECK("sort_small_kernel");
  } else {
    QV_CUDA_CHECK(cudaMemsetAsync(counts, 0, size_t(p.nlist) * 4, stream));
    count_kernel<<<blocks_for(pairs), kThreads, 0, stream>>>(p.lists, pairs, counts);
    QV_LAUNCH_CHECK("count_kernel");
    start_kernel<<<1, kScanThreads, 0, stream>>>(counts, p.list_size, p.nlist, starts, cursor, unit_start);
    QV_LAUNCH_CHECK("start_kernel");
    place_kernel<<<blocks_for(pairs), kThreads, 0, stream>>>(p.lists, pairs, cursor, sorted);
    QV_LAUNCH_CHECK("place_kernel");
    segments_kernel<<<blocks_for(p.rows), kThreads, 0, stream>>>(p.lists, p.rows, p.nprobe, p.list_size, p.seg);
    QV_LAUNCH_CHECK("segments_kernel");
  }
  // Enough blocks to fill the device, no more than there can be units.
  const int64_t tiles = (p.max_list_size + kEntries - 1) / kEntries;
  const int64_t blocks = std::min<int64_t>(p.nlist * tiles, int64_t(p.sm_count) * kBlocksPerSm);
  distance_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(p, starts, counts, sorted, unit_start);
  QV_LAUNCH_CHECK("distance_kernel");
}

}  // namespace quiver::gpu
