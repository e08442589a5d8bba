// range_fused.h: the mma.sync products of tf32_select.cu (same tiling, same staging), with an
// epilogue that filters the keys against per-query thresholds and checks the candidates exactly.
#include "cuda/flat/range_fused.h"

#include <algorithm>
#include <cstdint>

#include "cpp/core/error.h"
#include "cuda/core/async_copy.cuh"
#include "cuda/core/error.h"
#include "cuda/flat/tf32_select.h"
#include "cuda/select/warp_lanes.cuh"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int kQueries = 128;  // queries per block, in shared memory for the block's life
constexpr int kRows = 256;     // base rows per tile
constexpr int kDepth = 32;     // values of each base row per stage (two stages: one copied, one multiplied)
// Staged rows padded to a stride of 4 mod 8 floats: fragment loads free of bank conflicts.
constexpr int kPad = 4;
constexpr int kStageStride = kDepth + kPad;
// Warps: 4 along the rows x 2 along the queries, each owning a 64 x 64 sub-tile of m16n8k8 products.
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kWarpRows = 64;
constexpr int kWarpQueries = 64;
constexpr int kRowFrags = kWarpRows / 16;
constexpr int kQueryFrags = kWarpQueries / 8;
constexpr int kKeysPerThread = kRowFrags * kQueryFrags * 4;
static_assert((kRows / kWarpRows) * (kQueries / kWarpQueries) == kWarps, "the warps cover the tile");
static_assert(kKeysPerThread == 128, "a thread's candidates fit two 64-bit masks");
constexpr int kRowGroupThreads = kQueries / kWarpQueries * kWarpSize;  // the warps sharing rows
constexpr int64_t kMaxDim = 128;                                       // the query tile in shared memory
constexpr int64_t kMaxRows = int64_t(1) << 30;  // int rows on the device, with room past the last

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int padded_depth(int dim) { return (dim + kDepth - 1) / kDepth * kDepth; }

size_t shared_bytes(int64_t dim) {
  const int64_t words = kQueries * (padded_depth(static_cast<int>(dim)) + kPad) + 2 * kRows * kStageStride;
  return size_t(words) * 4;
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void load_matrices(uint32_t (&r)[4], const float* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}

// exact_key.cuh's value (vec4 path; range_kernels.cu's exact_value), bit for bit: the one order of summation.
__device__ __forceinline__ float exact_value(const float* x, const float* y, int dim, bool l2) {
  float acc = 0.f;
  auto step = [&](float a, float b) {
    if (l2) {
      const float t = a - b;
      acc = fmaf(t, t, acc);
    } else {
      acc = fmaf(a, b, acc);
    }
  };
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4* y4 = reinterpret_cast<const float4*>(y);
  // Unrolled: the base row's loads (from L2, mostly) go out several at a time; the sums stay in order.
#pragma unroll 8
  for (int c = 0; c < dim / 4; ++c) {
    const float4 a = x4[c];
    const float4 b = __ldg(y4 + c);
    step(a.x, b.x);
    step(a.y, b.y);
    step(a.z, b.z);
    step(a.w, b.w);
  }
  return acc;
}

__device__ __forceinline__ bool allowed(const uint8_t* bits, int64_t nbits, int row) {
  return bits == nullptr || (row < nbits && ((bits[row >> 3] >> (row & 7)) & 1) != 0);
}

__global__ void __launch_bounds__(kThreads, 1)
    range_fused_kernel(const float* __restrict__ x, int nq, const float* __restrict__ y,
                       const float* __restrict__ norms, int n, int dim, bool l2, const float* __restrict__ thresholds,
                       const uint8_t* __restrict__ filter, int64_t filter_bits, float radius, int split_rows,
                       const RangeHitBuffer out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) float shared[];
  const int depth = padded_depth(dim);
  const int x_stride = depth + kPad;
  float* xs = shared;
  float* ys = xs + kQueries * x_stride;  // two stages of kRows x kStageStride

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int group = lane / 4, member = lane % 4;
  const int q0 = static_cast<int>(blockIdx.x) * kQueries;
  const int split = static_cast<int>(blockIdx.y);
  const int row_begin = min(n, split * split_rows);
  const int row_end = min(n, row_begin + split_rows);
  const int tiles = (row_end - row_begin + kRows - 1) / kRows;
  const int chunks = depth / kDepth;

  // Stage copies as tf32_select.cu: each row group copies and reads only its own rows, waiting only
  // for itself (a named barrier) between stages.
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
  __syncthreads();  // the query tile is in place

  const int warp_row = warp % (kRows / kWarpRows) * kWarpRows;
  const int warp_query = warp / (kRows / kWarpRows) * kWarpQueries;
  const float alpha = l2 ? -2.f : -1.f;
  // The thresholds of this thread's 16 queries; -inf for queries past the block (never candidates).
  float limit[kQueryFrags][2];
#pragma unroll
  for (int f = 0; f < kQueryFrags; ++f)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int q = q0 + warp_query + 8 * f + 2 * member + e;
      limit[f][e] = q < nq ? thresholds[q] : -__int_as_float(0x7f800000);
    }
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

    // ---- candidates: acc[m][f][i] is row tile_row + 16 m (+ 8 for i >= 2), query warp_query + 8 f +
    // 2 member (+ 1 for odd i). A key passes unless it is above the threshold (NaN keys pass: the
    // exact value decides); rows past the split never do. ----
    const int tile_row = row_begin + tile * kRows + warp_row + group;
    uint64_t candidates[2] = {0, 0};
#pragma unroll
    for (int m = 0; m < kRowFrags; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = tile_row + 16 * m + 8 * h;
        if (row >= row_end) continue;
        const float bias = l2 ? __ldg(norms + row) : 0.f;
#pragma unroll
        for (int f = 0; f < kQueryFrags; ++f)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float key = fmaf(alpha, acc[m][f][2 * h + e], bias);
            const int bit = (m * kQueryFrags + f) * 4 + 2 * h + e;
            if (!(key > limit[f][e])) candidates[bit / 64] |= uint64_t(1) << (bit % 64);
          }
      }

    // ---- hits: each lane checks one candidate at a time, exactly; the warp appends its hits with
    // one atomic on the total ----
    while (__any_sync(kFullWarp, (candidates[0] | candidates[1]) != 0)) {
      int bit = -1;
      if (candidates[0] != 0) {
        bit = __ffsll(static_cast<long long>(candidates[0])) - 1;
        candidates[0] &= candidates[0] - 1;
      } else if (candidates[1] != 0) {
        bit = 64 + __ffsll(static_cast<long long>(candidates[1])) - 1;
        candidates[1] &= candidates[1] - 1;
      }
      bool hit = false;
      int q = 0, row = 0;
      float value = 0.f;
      if (bit >= 0) {
        const int i = bit % 4, f = bit / 4 % kQueryFrags, m = bit / 4 / kQueryFrags;
        row = tile_row + 16 * m + 8 * (i / 2);
        q = q0 + warp_query + 8 * f + 2 * member + i % 2;
        if (q < nq && allowed(filter, filter_bits, row)) {
          value = exact_value(xs + (q - q0) * x_stride, y + int64_t(row) * dim, dim, l2);
          hit = l2 ? value <= radius : value >= radius;
        }
      }
      const unsigned mask = __ballot_sync(kFullWarp, hit);
      if (mask == 0) continue;
      unsigned long long first = 0;
      if (lane == __ffs(mask) - 1) first = atomicAdd(out.tally, static_cast<unsigned long long>(__popc(mask)));
      first = __shfl_sync(kFullWarp, first, __ffs(mask) - 1);
      if (hit) {
        atomicAdd(out.tally + 1 + q, 1ull);
        const unsigned long long slot = first + static_cast<unsigned long long>(__popc(mask & ((1u << lane) - 1u)));
        if (slot < static_cast<unsigned long long>(out.capacity)) {
          out.query[slot] = q;
          out.row[slot] = row;
          out.value[slot] = value;
        }
      }
    }
  }
#else
  __trap();  // range_fused_fits refuses devices without TF32 tensor cores
#endif
}

}  // namespace

bool range_fused_fits(const SelectLimits& limits, int64_t dim, int64_t n) {
  return dim >= 4 && dim <= kMaxDim && dim % 4 == 0 && n >= 1 && n < kMaxRows && limits.compute_capability >= 80 &&
         shared_bytes(dim) <= size_t(limits.max_shared_bytes);
}

void launch_range_fused(const SelectLimits& limits, const RangeFusedSearch& s, const RangeHitBuffer& out,
                        cudaStream_t stream) {
  require(range_fused_fits(limits, s.dim, s.n) && s.rows >= 1 && s.rows < kMaxRows,
          "range_fused: rows = ", s.rows, ", n = ", s.n, ", dim = ", s.dim, " is not a shape it takes");
  const size_t shared = shared_bytes(s.dim);
  QV_CUDA_CHECK(cudaFuncSetAttribute(range_fused_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(shared)));
  // Splits of the base: the same wave-filling count as the k-NN's fused pass (one block per SM).
  const int64_t splits = tf32_select_splits(limits, s.rows, s.n);
  const int64_t split_rows = ceil_div(ceil_div(s.n, splits), kRows) * kRows;
  const dim3 grid(static_cast<unsigned>(ceil_div(s.rows, kQueries)), static_cast<unsigned>(splits));
  range_fused_kernel<<<grid, kThreads, shared, stream>>>(
      s.queries, static_cast<int>(s.rows), s.base, s.norms, static_cast<int>(s.n), static_cast<int>(s.dim), s.l2,
      s.thresholds, s.filter, s.filter_bits, s.radius, static_cast<int>(split_rows), out);
  QV_LAUNCH_CHECK("range_fused_kernel");
}

}  // namespace quiver::gpu
