#include "cuda/flat/tf32_select.h"

#include <algorithm>
#include <cstdint>

#include "cpp/core/error.h"
#include "cuda/core/async_copy.cuh"
#include "cuda/core/error.h"
#include "cuda/flat/tf32_lists.cuh"
#include "cuda/flat/tf32_select_sm90a.h"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kQueries = 128;  // queries per block, in shared memory for the block's life
constexpr int kRows = 256;     // base rows per tile
constexpr int kDepth = 32;     // values of each base row per stage (two stages: one copied, one multiplied)
// Staged rows (queries and base) are padded to a stride of 4 mod 8 floats: the eight lane groups of a
// fragment load then start in eight different 4-bank groups (no bank conflicts).
constexpr int kPad = 4;
constexpr int kStageStride = kDepth + kPad;
// Warps: 4 along the rows x 2 along the queries, each owning a 64 x 64 sub-tile of m16n8k8 products:
// 32 independent products per step of 8 values, 128 bytes of fragments read per product.
constexpr int kWarpRows = 64;
constexpr int kWarpQueries = 64;
constexpr int kRowFrags = kWarpRows / 16;
constexpr int kQueryFrags = kWarpQueries / 8;
constexpr int kKeysPerThread = kRowFrags * kQueryFrags * 4;
static_assert((kRows / kWarpRows) * (kQueries / kWarpQueries) == kWarps, "the warps cover the tile");
static_assert(kKeysPerThread == 128, "a thread's refused keys fit two 64-bit masks");
constexpr int kRowGroupThreads = kQueries / kWarpQueries * kWarpSize;  // the warps sharing rows
using tf32::allowed;
using tf32::kList;
using tf32::kNoRow;
using tf32::kPending;
using tf32::QueryLists;
using tf32::start_bound;
static_assert(kTf32SelectMaxK == kList, "kTf32SelectMaxK: the best list");
// A split holds at least this many tiles: each block then amortises its start (the query tile's
// load, the best lists filling up) over a few tiles.
constexpr int64_t kMinSplitTiles = 4;
constexpr int64_t kMaxSplits = 1024;
// The grid is sized for whole waves: the fewest splits whose blocks fill at least this fraction of
// the waves they take.
constexpr double kMinWaveFill = 0.95;
// Row numbers are int on the device, with room for a split past the last row.
constexpr int64_t kMaxRows = int64_t(1) << 30;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Row values the kernel multiplies: dim rounded up to whole stages (the rest zeros).
__host__ __device__ constexpr int padded_depth(int dim) { return (dim + kDepth - 1) / kDepth * kDepth; }

// The shapes the kernel takes, device aside (tf32_select.h).
bool shape_fits(int64_t dim, int64_t kc, int64_t n) {
  return dim >= 4 && dim <= kTf32SelectMaxDim && dim % 4 == 0 && kc >= 1 && kc <= kTf32SelectMaxK && n >= 1 &&
         n <= kMaxRows;
}

// Shared memory: the query tile, two base stages, per query the best list (keys, rows), the pending
// list (keys, rows), the limit and the pending count.
size_t shared_bytes(int64_t dim) {
  const int64_t words = kQueries * (padded_depth(static_cast<int>(dim)) + kPad) + 2 * kRows * kStageStride +
                        tf32::lists_words(kQueries);
  return size_t(words) * 4;
}

// d += a b for one m16n8k8 TF32 product: a 16 x 8 (rows x depth), b 8 x 8 (depth x queries); the
// tensor cores read the top 19 bits of each float.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Four 8 x 4-float matrices from shared memory, lane i giving the address of row i % 8 of matrix i / 8:
// register j of lane l holds matrix j's float (l / 4, l % 4), the layout of an mma TF32 fragment.
__device__ __forceinline__ void load_matrices(uint32_t (&r)[4], const float* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}

__global__ void __launch_bounds__(kThreads, 1)
    tf32_select_kernel(const float* __restrict__ x, int nq, const float* __restrict__ y,
                       const float* __restrict__ norms, int n, int dim, int kc, bool l2,
                       const uint8_t* __restrict__ filter, int64_t filter_bits, int row_offset, int split_rows,
                       int splits, const float* __restrict__ bounds, int64_t bounds_ld,
                       float* __restrict__ out_keys, int32_t* __restrict__ out_rows) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const float kInf = __int_as_float(0x7f800000);
  extern __shared__ __align__(16) float shared[];
  const int depth = padded_depth(dim);
  const int x_stride = depth + kPad;
  float* xs = shared;
  float* ys = xs + kQueries * x_stride;  // two stages of kRows x kStageStride
  const QueryLists lists = QueryLists::place(ys + 2 * kRows * kStageStride, kQueries);

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int group = lane / 4, member = lane % 4;  // the mma fragments' row / column within a lane group
  const int q0 = static_cast<int>(blockIdx.x) * kQueries;
  const int split = static_cast<int>(blockIdx.y);
  const int row_begin = min(n, split * split_rows);
  const int row_end = min(n, row_begin + split_rows);
  const int tiles = (row_end - row_begin + kRows - 1) / kRows;
  const int chunks = depth / kDepth;

  // The next stage to copy: base rows [load_row, load_row + kRows), values [load_col, + kDepth).
  // The warps of a row group (kWarpRows rows, kRowGroupThreads threads) copy and read only their
  // own rows, so they wait only for each other (a named barrier) between stages. Each thread copies
  // one 16-byte column slot of every kCopyRowStep-th row of its group; rows past the split and values
  // past dim are zeros.
  constexpr int kSlotsPerRow = kDepth / 4;
  constexpr int kCopyRowStep = kRowGroupThreads / kSlotsPerRow;
  const int row_group = warp % (kRows / kWarpRows);
  const int group_tid = warp / (kRows / kWarpRows) * kWarpSize + lane;
  const int copy_row = row_group * kWarpRows + group_tid / kSlotsPerRow, copy_col = group_tid % kSlotsPerRow * 4;
  int load_row = row_begin, load_col = 0;
  auto load_next = [&](float* stage) {
    const int rows_left = load_col + copy_col < dim ? row_end - load_row - copy_row : 0;
    const float* src = y + int64_t(load_row + copy_row) * dim + load_col + copy_col;
    const int64_t src_step = int64_t(kCopyRowStep) * dim;
    float* dst = stage + copy_row * kStageStride + copy_col;
#pragma unroll
    for (int i = 0; i < kWarpRows / kCopyRowStep; ++i, src += src_step, dst += kCopyRowStep * kStageStride) {
      if (i * kCopyRowStep < rows_left) {
        copy_slot16(dst, src);
      } else {
        *reinterpret_cast<float4*>(dst) = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
    load_col += kDepth;
    if (load_col == depth) {
      load_col = 0;
      load_row += kRows;
    }
  };
  if (tiles > 0) load_next(ys);
  commit_copies();
  for (int i = tid; i < kQueries * depth / 4; i += kThreads) {
    const int q = i / (depth / 4), c = i % (depth / 4) * 4;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (q0 + q < nq && c < dim) v = *reinterpret_cast<const float4*>(x + int64_t(q0 + q) * dim + c);
    *reinterpret_cast<float4*>(xs + q * x_stride + c) = v;
  }
  for (int q = warp; q < kQueries; q += kWarps)
    lists.reset(q, q0 + q < nq, lane, start_bound(bounds, bounds_ld, q0 + q, nq));

  __syncthreads();  // the query tile and the lists are in place
  const int warp_row = warp % (kRows / kWarpRows) * kWarpRows;
  const int warp_query = warp / (kRows / kWarpRows) * kWarpQueries;
  const float alpha = l2 ? -2.f : -1.f;
  // ldmatrix addresses: A (rows) matrices 0..3 = rows +0 / +8, values +0 / +4; B (queries) matrices
  // 0..3 = values +0 / +4 of queries +0, then of queries +8 (two fragments).
  const int matrix = lane / 8, matrix_row = lane % 8;
  const float* a_base = ys + (warp_row + matrix % 2 * 8 + matrix_row) * kStageStride + matrix / 2 * 4;
  const float* b_base = xs + (warp_query + matrix / 2 * 8 + matrix_row) * x_stride + matrix % 2 * 4;
  int stage = 0;
  for (int tile = 0; tile < tiles; ++tile) {
    float acc[kRowFrags][kQueryFrags][4];
#pragma unroll
    for (int m = 0; m < kRowFrags; ++m)
#pragma unroll
      for (int f = 0; f < kQueryFrags; ++f)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][f][i] = 0.f;
    for (int chunk = 0; chunk < chunks; ++chunk) {
      wait_copies<0>();
      // The group's stage is in; its other one is no longer read.
      asm volatile("bar.sync %0, %1;\n" ::"r"(1 + row_group), "n"(kRowGroupThreads));
      if (load_row < row_end) load_next(ys + (stage ^ 1) * kRows * kStageStride);
      commit_copies();
      const float* a_stage = a_base + stage * kRows * kStageStride;
      const float* b_chunk = b_base + chunk * kDepth;
#pragma unroll
      for (int kk = 0; kk < kDepth; kk += 8) {
        uint32_t a[kRowFrags][4], b[kQueryFrags / 2][4];
#pragma unroll
        for (int m = 0; m < kRowFrags; ++m) load_matrices(a[m], a_stage + m * 16 * kStageStride + kk);
#pragma unroll
        for (int f = 0; f < kQueryFrags / 2; ++f) load_matrices(b[f], b_chunk + f * 16 * x_stride + kk);
#pragma unroll
        for (int m = 0; m < kRowFrags; ++m)
#pragma unroll
          for (int f = 0; f < kQueryFrags; ++f) {
            const uint32_t bf[2] = {b[f / 2][f % 2 * 2], b[f / 2][f % 2 * 2 + 1]};
            mma_tf32(acc[m][f], a[m], bf);
          }
      }
      stage ^= 1;
    }

    // ---- the tile's keys: acc[m][f][i] is row warp_row + 16 m + group (+ 8 for i >= 2), query
    // warp_query + 8 f + 2 member (+ 1 for odd i), as the m16n8 accumulator fragment lays them out ----
    const int tile_row = row_begin + tile * kRows + warp_row + group;
    float bias[kRowFrags][2];  // ||y||^2 (L2) or 0; NaN past the split: never offered
#pragma unroll
    for (int m = 0; m < kRowFrags; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = tile_row + 16 * m + 8 * h;
        bias[m][h] = row < row_end ? (l2 ? __ldg(norms + row) : 0.f) : __int_as_float(0x7fffffff);
      }
    // Each key within its query's limit is offered to the pending list; offers beyond its room are
    // refused and kept in `refused`, to be offered again once full lists have been merged.
    float limit[kQueryFrags][2];
    auto load_limits = [&] {
#pragma unroll
      for (int f = 0; f < kQueryFrags; ++f)
#pragma unroll
        for (int e = 0; e < 2; ++e) limit[f][e] = lists.limits[warp_query + 8 * f + 2 * member + e];
    };
    auto offer = [&](int m, int f, int i) {
      const float key = fmaf(alpha, acc[m][f][i], bias[m][i / 2]);
      if (!(key <= limit[f][i % 2])) return true;
      const int row = row_offset + tile_row + 16 * m + 8 * (i / 2);
      if (!allowed(filter, filter_bits, row)) return true;
      return lists.offer(warp_query + 8 * f + 2 * member + i % 2, key, row);
    };
    load_limits();
    uint64_t refused[2] = {0, 0};
    // A thread's eight keys of one query are offered only when the smallest is within the limit:
    // after the first tiles, few are.
#pragma unroll
    for (int f = 0; f < kQueryFrags; ++f)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float smallest = kInf;
#pragma unroll
        for (int m = 0; m < kRowFrags; ++m)
#pragma unroll
          for (int h = 0; h < 2; ++h) smallest = fminf(smallest, fmaf(alpha, acc[m][f][2 * h + e], bias[m][h]));
        if (!(smallest <= limit[f][e])) continue;
#pragma unroll
        for (int m = 0; m < kRowFrags; ++m)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int b = (m * kQueryFrags + f) * 4 + 2 * h + e;
            if (!offer(m, f, 2 * h + e)) refused[b / 64] |= uint64_t(1) << (b % 64);
          }
      }
    // Full pending lists are merged (a warp each); then the refused keys are offered again against
    // the tighter limits, until none is refused.
    for (;;) {
      __syncthreads();  // every offer is in
      // The warp's queries whose pending list is full (lane l looks at query warp + kWarps l).
      const bool full = lane < kQueries / kWarps && lists.counts[warp + kWarps * lane] >= kPending;
      for (unsigned mask = __ballot_sync(kFullWarp, full); mask != 0; mask &= mask - 1)
        lists.merge(warp + kWarps * (__ffs(mask) - 1), kc, lane);
      if (!__syncthreads_or((refused[0] | refused[1]) != 0)) break;  // (also: every merge is done)
      load_limits();
      const uint64_t again[2] = {refused[0], refused[1]};
      refused[0] = refused[1] = 0;
#pragma unroll
      for (int m = 0; m < kRowFrags; ++m)
#pragma unroll
        for (int f = 0; f < kQueryFrags; ++f)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int b = (m * kQueryFrags + f) * 4 + i;
            const uint64_t bit = uint64_t(1) << (b % 64);
            if ((again[b / 64] & bit) != 0 && !offer(m, f, i)) refused[b / 64] |= bit;
          }
    }
  }

  // ---- the last pending entries, then each query's kc best of the split ----
  __syncthreads();
  for (int q = warp; q < kQueries && q0 + q < nq; q += kWarps) {
    const int64_t out = (int64_t(q0 + q) * splits + split) * kc;
    lists.write(q, kc, lane, out_keys + out, out_rows + out);
  }
#else
  __trap();  // tf32_select_fits refuses devices without TF32 tensor cores
#endif
}

// Whether the device runs the sm_90a kernel: compute capability 9.0 exactly (what sm_90a code runs on).
bool takes_sm90a(const SelectLimits& limits) { return limits.compute_capability == 90; }

}  // namespace

bool tf32_select_fits(const SelectLimits& limits, int64_t dim, int64_t kc, int64_t n) {
  const size_t needed = takes_sm90a(limits) ? tf32_select_sm90a_shared_bytes(dim) : shared_bytes(dim);
  return shape_fits(dim, kc, n) && limits.compute_capability >= 80 && needed <= size_t(limits.max_shared_bytes);
}

int64_t tf32_select_splits(const SelectLimits& limits, int64_t nq, int64_t n, int64_t min_splits) {
  const int64_t query_tiles = ceil_div(nq, kQueries);
  const int64_t most = std::max<int64_t>(1, std::min(kMaxSplits, ceil_div(n, kMinSplitTiles * kRows)));
  const int64_t slots = std::max(1, limits.sm_count);  // one block per multiprocessor
  const int64_t least = std::clamp<int64_t>(min_splits, 1, most);
  int64_t best = least;
  double best_fill = 0;
  for (int64_t s = least; s <= most; ++s) {
    const int64_t blocks = query_tiles * s;
    const double fill = double(blocks) / double(ceil_div(blocks, slots) * slots);
    if (fill >= kMinWaveFill) return s;
    if (fill > best_fill) {
      best = s;
      best_fill = fill;
    }
  }
  return best;
}

void launch_tf32_select(const SelectLimits& limits, const float* queries, int64_t nq, const float* base,
                        const float* base_norms, int64_t n, int64_t dim, int64_t kc, bool l2, const uint8_t* filter,
                        int64_t filter_bits, int64_t splits, float* keys, int32_t* rows, cudaStream_t stream,
                        Tf32SelectKernel kernel, int64_t row_offset, const float* bounds, int64_t bounds_ld) {
  require(nq >= 1 && splits >= 1 && splits <= kMaxSplits && shape_fits(dim, kc, row_offset + n) && row_offset >= 0,
          "tf32_select: nq = ", nq, ", n = ", n, " from row ", row_offset, ", dim = ", dim, ", kc = ", kc,
          ", splits = ", splits, " is not a shape it takes");
  if (kernel == Tf32SelectKernel::automatic && takes_sm90a(limits)) {
    launch_tf32_select_sm90a(queries, nq, base, base_norms, row_offset, n, dim, kc, l2, filter, filter_bits, splits,
                             bounds, bounds_ld, keys, rows, stream);
    return;
  }
  const size_t shared = shared_bytes(dim);
  QV_CUDA_CHECK(cudaFuncSetAttribute(tf32_select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(shared)));
  const int64_t split_rows = ceil_div(ceil_div(n, splits), kRows) * kRows;
  const dim3 grid(static_cast<unsigned>(ceil_div(nq, kQueries)), static_cast<unsigned>(splits));
  tf32_select_kernel<<<grid, kThreads, shared, stream>>>(
      queries, static_cast<int>(nq), base, base_norms, static_cast<int>(n), static_cast<int>(dim),
      static_cast<int>(kc), l2, filter, filter_bits, static_cast<int>(row_offset), static_cast<int>(split_rows),
      static_cast<int>(splits), bounds, bounds_ld, keys, rows);
  QV_LAUNCH_CHECK("tf32_select_kernel");
}

}  // namespace quiver::gpu
