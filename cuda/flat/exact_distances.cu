// exact_distances.h's kernels: the candidates' re-rank and the direct distance tile, both summing in
// the one order that header defines (so a pair gets the same bits from either).
#include "cuda/flat/exact_distances.h"

#include <algorithm>

#include "cuda/core/error.h"
#include "cuda/flat/certify.cuh"
#include "cuda/flat/compute_modes.h"
#include "cuda/flat/exact_key.cuh"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu {

namespace {

constexpr int kRerankThreads = 256;
// Grid-stride loops: enough blocks to fill any current GPU, few enough to launch cheaply.
constexpr int64_t kMaxBlocks = 65535;

// One thread per (query, candidate); the lanes of a warp mostly share the query (kc >= 17), so its
// loads are broadcasts, and each lane walks its own candidate row.
__global__ void rerank_kernel(const float* base, const float* queries, int64_t dim, const int32_t* rows,
                              int64_t count, int64_t kc, bool l2, bool vec4, float* keys) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int32_t row = rows[i];
    if (row == SentinelValue<int32_t>::value) {
      keys[i] = kSentinelKey;
      continue;
    }
    keys[i] = exact_key(base, queries + (i / kc) * dim, dim, row, l2, vec4);
  }
}

// The direct tile: a block computes kTile queries x kTile base rows, each thread kPer x kPer pairs,
// the operands staged through shared memory kDepth dimensions at a time (transposed, so a thread
// reads its kPer values of one dimension as one float4).
constexpr int kTile = 64;
constexpr int kPer = 4;
constexpr int kSide = kTile / kPer;  // threads per block edge
constexpr int kDepth = 16;
constexpr int kPad = 4;  // keeps rows of the staged arrays 16-byte aligned
constexpr int kDirectThreads = kSide * kSide;
static_assert(kTile * kDepth == kDirectThreads * 4, "each thread stages 4 values of each operand");

__global__ void __launch_bounds__(kDirectThreads)
    direct_tile_kernel(const float* x, const float* y, int64_t rows, int64_t cols, int dim, bool l2, float* tile,
                       int64_t ld) {
  __shared__ __align__(16) float xs[kDepth][kTile + kPad];
  __shared__ __align__(16) float ys[kDepth][kTile + kPad];
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const int64_t q0 = int64_t(blockIdx.y) * kTile, c0 = int64_t(blockIdx.x) * kTile;
  // Staging: thread t copies 4 consecutive dimensions of row t / 4 of each operand.
  const int stage_row = threadIdx.x / 4, stage_dim = (threadIdx.x % 4) * 4;
  const bool x_row_ok = q0 + stage_row < rows, y_row_ok = c0 + stage_row < cols;
  const float* x_src = x + (x_row_ok ? (q0 + stage_row) * dim : 0);
  const float* y_src = y + (y_row_ok ? (c0 + stage_row) * dim : 0);

  float acc[kPer][kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i)
#pragma unroll
    for (int j = 0; j < kPer; ++j) acc[i][j] = 0.f;

  for (int d0 = 0; d0 < dim; d0 += kDepth) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int d = d0 + stage_dim + j;
      xs[stage_dim + j][stage_row] = x_row_ok && d < dim ? __ldg(x_src + d) : 0.f;
      ys[stage_dim + j][stage_row] = y_row_ok && d < dim ? __ldg(y_src + d) : 0.f;
    }
    __syncthreads();
    auto one = [&](int d) {
      const float4 a = *reinterpret_cast<const float4*>(&xs[d][ty * kPer]);
      const float4 b = *reinterpret_cast<const float4*>(&ys[d][tx * kPer]);
      const float av[kPer] = {a.x, a.y, a.z, a.w};
      const float bv[kPer] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < kPer; ++i)
#pragma unroll
        for (int j = 0; j < kPer; ++j) acc[i][j] = exact_step(l2, av[i], bv[j], acc[i][j]);
    };
    // Exactly dim steps per pair (no padded step: it could turn a -0 sum into +0).
    if (d0 + kDepth <= dim) {
#pragma unroll
      for (int d = 0; d < kDepth; ++d) one(d);
    } else {
      for (int d = 0; d < dim - d0; ++d) one(d);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int64_t q = q0 + ty * kPer + i;
    if (q >= rows) continue;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t c = c0 + tx * kPer + j;
      if (c < cols) tile[q * ld + c] = l2 ? acc[i][j] : -acc[i][j];
    }
  }
}

// (key, row) before (other key, other row): the order of every result, ties to the smaller row.
__device__ __forceinline__ bool before(float a, int32_t ra, float b, int32_t rb) {
  return a < b || (a == b && ra < rb);
}

__global__ void finish_small_kernel(const float* base, const float* queries, int64_t dim, const float* approx_keys,
                                    const int32_t* approx_rows, int kc, int k, int64_t nq, bool l2, bool vec4,
                                    bool certify, const CertifyModel model, const double* query_stats,
                                    const unsigned* base_stats, uint8_t* flags, float* distances, int64_t* ids) {
  constexpr int32_t kNone = SentinelValue<int32_t>::value;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarpSize);
  for (int64_t q = int64_t(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize; q < nq; q += warps) {
    int32_t row = lane < kc ? approx_rows[q * kc + lane] : kNone;
    float key = row == kNone ? kSentinelKey : exact_key(base, queries + q * dim, dim, row, l2, vec4);
    // Bitonic sort of the warp's 32 (key, row) pairs, ascending.
#pragma unroll
    for (int size = 2; size <= kWarpSize; size *= 2) {
#pragma unroll
      for (int stride = size / 2; stride > 0; stride /= 2) {
        const float other_key = __shfl_xor_sync(kFullWarp, key, stride);
        const int32_t other_row = __shfl_xor_sync(kFullWarp, row, stride);
        const bool ascending = (lane & size) == 0;
        const bool lower = (lane & stride) == 0;
        const bool take = lower == ascending ? before(other_key, other_row, key, row)
                                             : before(key, row, other_key, other_row);
        if (take) {
          key = other_key;
          row = other_row;
        }
      }
    }
    if (lane < k) {
      distances[q * k + lane] = row == kNone ? (l2 ? kSentinelKey : -kSentinelKey) : (l2 ? fmaxf(key, 0.f) : -key);
      ids[q * k + lane] = row == kNone ? int64_t(-1) : int64_t(row);
    }
    if (certify) {
      const float kth_key = __shfl_sync(kFullWarp, key, k - 1);
      const int32_t kth_row = __shfl_sync(kFullWarp, row, k - 1);
      if (lane == 0)
        flags[q] = certify_query(model, approx_keys[q * kc + kc - 1], approx_rows[q * kc + kc - 1], kth_key, kth_row,
                                 query_stats + 2 * q, base_stats, __int_as_float(0x7f800000))
                       ? 1
                       : 0;
    }
  }
}

// The same keys, rows read together: a thread's row alone (rerank_kernel) is 32 scattered 16-byte
// pieces per load of a warp, and the gathers ran at 1.7 TB/s (k = 1024's 1280 candidates a query
// over 1M x 128, 3.9 ms). Here each warp's 32 pairs (a lane each) have their rows copied, kChunk
// dimensions at a time, into the warp's shared memory with coalesced loads (8 lanes a row chunk,
// whole 128-byte lines), and each lane then sums its own pair from there, in exact_key's one order:
// the same bits. Rows 16-byte aligned (vec4).
constexpr int kChunk = 32;                // dimensions a row chunk
// Floats a staged row chunk: a quarter warp's float4 reads of 8 rows then fall on distinct banks.
constexpr int kChunkStride = kChunk + 4;
constexpr int kLanesPerChunk = kChunk / 4;                // a float4 each
constexpr int kRowsPerLoad = kWarpSize / kLanesPerChunk;  // row chunks a warp loads at once
constexpr int kStagedWarps = kRerankThreads / kWarpSize;

__global__ void __launch_bounds__(kRerankThreads)
    rerank_staged_kernel(const float* base, const float* queries, int64_t dim, const int32_t* rows, int64_t count,
                         int64_t kc, bool l2, float* keys) {
  __shared__ __align__(16) float staged[kStagedWarps][kWarpSize * kChunkStride];
  constexpr int32_t kNone = SentinelValue<int32_t>::value;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  float* mine = staged[warp];
  const int64_t dim4 = dim / 4;
  const int64_t warps = int64_t(gridDim.x) * kStagedWarps;
  // (Every lane of a warp takes the same trip count: the loop's shuffles need them all.)
  for (int64_t first = (int64_t(blockIdx.x) * kStagedWarps + warp) * kWarpSize; first < count;
       first += warps * kWarpSize) {
    const int64_t i = first + lane;
    const int32_t row = i < count ? rows[i] : kNone;
    const float4* x4 = reinterpret_cast<const float4*>(queries + (i < count ? i / kc : 0) * dim);
    float acc = 0.f;
    for (int64_t c0 = 0; c0 < dim4; c0 += kLanesPerChunk) {
      // Row chunk r of the 32 by lanes 8 (r % 4) .. 8 (r % 4) + 7: float4 c0 + lane % 8 of its row.
      __syncwarp();  // the lanes are done with the previous chunk
#pragma unroll
      for (int load = 0; load < kWarpSize / kRowsPerLoad; ++load) {
        const int r = load * kRowsPerLoad + lane / kLanesPerChunk;
        const int32_t their_row = __shfl_sync(kFullWarp, row, r);
        const int64_t c = c0 + lane % kLanesPerChunk;
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (their_row != kNone && c < dim4)
          v = __ldg(reinterpret_cast<const float4*>(base + int64_t(their_row) * dim) + c);
        *reinterpret_cast<float4*>(mine + r * kChunkStride + 4 * (lane % kLanesPerChunk)) = v;
      }
      __syncwarp();  // the chunk is staged
      const float4* y4 = reinterpret_cast<const float4*>(mine + lane * kChunkStride);
      const int64_t steps = min(int64_t(kLanesPerChunk), dim4 - c0);
      for (int64_t j = 0; j < steps; ++j) {
        const float4 a = x4[c0 + j], b = y4[j];
        acc = exact_step(l2, a.x, b.x, acc);
        acc = exact_step(l2, a.y, b.y, acc);
        acc = exact_step(l2, a.z, b.z, acc);
        acc = exact_step(l2, a.w, b.w, acc);
      }
    }
    if (i < count) keys[i] = row == kNone ? kSentinelKey : l2 ? acc : -acc;
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

void launch_rerank(const float* base, const float* queries, int64_t dim, const int32_t* rows, int64_t nq,
                   int64_t kc, bool l2, float* keys, cudaStream_t stream) {
  const int64_t count = nq * kc;
  if (count == 0) return;
  const bool vec4 = dim % 4 == 0 && aligned16(base) && aligned16(queries);
  const auto blocks = static_cast<unsigned>(std::clamp<int64_t>((count + kRerankThreads - 1) / kRerankThreads, 1, kMaxBlocks));
  if (vec4) {
    rerank_staged_kernel<<<blocks, kRerankThreads, 0, stream>>>(base, queries, dim, rows, count, kc, l2, keys);
    QV_LAUNCH_CHECK("rerank_staged_kernel");
    return;
  }
  rerank_kernel<<<blocks, kRerankThreads, 0, stream>>>(base, queries, dim, rows, count, kc, l2, vec4, keys);
  QV_LAUNCH_CHECK("rerank_kernel");
}

void launch_direct_tile(const float* x, const float* y, int64_t rows, int64_t cols, int64_t dim, bool l2,
                        float* tile, int64_t ld, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile));
  direct_tile_kernel<<<grid, kDirectThreads, 0, stream>>>(x, y, rows, cols, static_cast<int>(dim), l2, tile, ld);
  QV_LAUNCH_CHECK("direct_tile_kernel");
}

void launch_finish_small(const float* base, const float* queries, int64_t dim, const float* approx_keys,
                         const int32_t* approx_rows, int64_t kc, int64_t k, int64_t nq, bool l2,
                         const CertifyModel* model, const double* query_stats, const unsigned* base_stats,
                         uint8_t* flags, float* distances, int64_t* ids, cudaStream_t stream) {
  if (nq == 0) return;
  const bool vec4 = dim % 4 == 0 && aligned16(base) && aligned16(queries);
  constexpr int kWarpsPerBlock = kRerankThreads / kWarpSize;
  const auto blocks =
      static_cast<unsigned>(std::clamp<int64_t>((nq + kWarpsPerBlock - 1) / kWarpsPerBlock, 1, kMaxBlocks));
  finish_small_kernel<<<blocks, kRerankThreads, 0, stream>>>(
      base, queries, dim, approx_keys, approx_rows, static_cast<int>(kc), static_cast<int>(k), nq, l2, vec4,
      model != nullptr, model != nullptr ? *model : CertifyModel{}, query_stats, base_stats, flags, distances, ids);
  QV_LAUNCH_CHECK("finish_small_kernel");
}

}  // namespace quiver::gpu
