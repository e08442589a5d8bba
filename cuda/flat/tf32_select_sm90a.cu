#include "cuda/flat/tf32_select_sm90a.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include "cpp/core/error.h"
#include "cuda/core/async_copy.cuh"
#include "cuda/core/error.h"
#include "cuda/flat/tf32_lists.cuh"
#include "cuda/flat/tf32_select.h"

namespace quiver::gpu {

namespace {

using tf32::allowed;
using tf32::kPending;
using tf32::QueryLists;
using tf32::start_bound;

// Two warpgroups select. Each multiplies its 64 queries (the M of the products, held in registers for
// the block's life) by the block's tile of base rows (the N, in shared memory), 8 values per product,
// then selects from the products; the two take turns at the tensor cores, so that one multiplies
// while the other selects (ping-pong). A ninth warp copies the tiles in.
constexpr int kWarpgroupThreads = 128;
constexpr int kSelectThreads = 2 * kWarpgroupThreads;
constexpr int kWarps = kSelectThreads / kWarpSize;  // the selecting warps
constexpr int kThreads = kSelectThreads + kWarpSize;  // and the copying warp
constexpr int kQueries = 128;
constexpr int kGroupQueries = 64;
constexpr int kWarpQueries = 16;  // the accumulator rows of one warp: its queries, which it alone selects for
constexpr int kRows = 96;         // base rows per tile
constexpr int kStages = 3;        // tiles in shared memory: one multiplied, the next ones being copied
constexpr int kAccumulators = kGroupQueries * kRows / kWarpgroupThreads;  // per thread
// The kernel is compiled per depth (values multiplied per row: dim rounded up to a multiple of
// kDepthStep, the rest zeros), so that its chain of products has no branch.
constexpr int kDepthStep = 32;
static_assert(kWarps * kWarpQueries == kQueries, "the warps cover the query tile");

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int padded_depth(int64_t dim) { return static_cast<int>(ceil_div(dim, kDepthStep) * kDepthStep); }

// Shared memory: kStages base tiles with their rows' biases and two barriers each, the query lists,
// and room to align the tiles to 1024 bytes.
constexpr int kTileAlign = 1024;
size_t shared_bytes(int64_t dim) {
  return size_t(kStages * (kRows * padded_depth(dim) + kRows + 4) + tf32::lists_words(kQueries)) * 4 + kTileAlign;
}

// A base tile as the products read it: K-major with the 128-byte swizzle. The tile is kDepth / 32
// blocks of 32 values; in a block, row r's 128 bytes are at r * 128 and its 16-byte chunk j (values
// 4 j .. 4 j + 3 of the block) at chunk j ^ (r % 8). Blocks start at multiples of 1024 bytes (the
// swizzle is a function of the address).
constexpr int kBlockValues = 32;
constexpr int kBlockFloats = kRows * kBlockValues;

// The descriptor of step s's 8 values: inside block s / 4, 32 bytes per step; 8-row groups 1024
// bytes apart; 128-byte swizzle.
__device__ __forceinline__ uint64_t tile_descriptor(const float* tile, int step) {
  const uint64_t address = shared_address(tile + step / 4 * kBlockFloats) + step % 4 * 32;
  const uint64_t group_stride = 1024;
  return ((address & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | ((group_stride >> 4) << 32) | (uint64_t(1) << 62);
}

// The tensor-memory-accelerator copies of the base tiles: the copying warp's lane 0 asks for a tile
// (a box of kRows rows x 32 values per block, swizzled as above, zeros past n and past dim) and the
// selecting warps wait on the tile's barrier, which counts the bytes in.
__device__ __forceinline__ void barrier_init(uint64_t* barrier, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(arrivals));
}

__device__ __forceinline__ void barrier_arrive(uint64_t* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(barrier)) : "memory");
}

// Named barriers between the two selecting warpgroups (0 is __syncthreads'): one waits for its turn
// at the tensor cores, the other arrives to give it.
__device__ __forceinline__ void turn_wait(int id) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(kSelectThreads) : "memory");
}

__device__ __forceinline__ void turn_give(int id) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "n"(kSelectThreads) : "memory");
}

__device__ __forceinline__ void barrier_expect(uint64_t* barrier, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void barrier_wait(uint64_t* barrier, int parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(shared_address(barrier)), "r"(parity)
        : "memory");
}

// A bulk copy of `bytes` (a multiple of 16, both addresses 16-byte aligned) from global memory,
// counted on `barrier` as the tiles are.
__device__ __forceinline__ void copy_bulk(float* dst, const float* src, uint32_t bytes, uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          shared_address(dst)),
      "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(shared_address(barrier))
      : "memory");
}

__device__ __forceinline__ void copy_box(float* dst, const CUtensorMap& map, int col, int row, uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<uint64_t>(&map)), "r"(col), "r"(row), "r"(shared_address(barrier))
      : "memory");
}

// d (+)= a b for 64 queries x kRows rows x 8 values: a in registers (as an m16n8k8 TF32 fragment per
// warp), b from shared memory; d is overwritten when accumulate is 0. Asynchronous: see commit / wait.
__device__ __forceinline__ void multiply(float (&d)[kAccumulators], const uint32_t (&a)[4], uint64_t b,
                                         int accumulate) {
  static_assert(kRows == 96, "the instruction's shape and operand list");
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %52, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, "
      "{%48, %49, %50, %51}, %53, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(accumulate), "l"(b));
}

// Keeps the compiler from moving accesses to the accumulators across the asynchronous products.
__device__ __forceinline__ void pin(float (&d)[kAccumulators]) {
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

template <int kDepth>
__global__ void __launch_bounds__(kThreads, 1)
    tf32_select_sm90a_kernel(const float* __restrict__ x, int nq, const __grid_constant__ CUtensorMap y,
                             const float* __restrict__ norms, int n, int dim, int kc, bool l2,
                             const uint8_t* __restrict__ filter, int64_t filter_bits, int row_offset, int split_rows,
                             int splits, const float* __restrict__ bounds, int64_t bounds_ld,
                             float* __restrict__ out_keys, int32_t* __restrict__ out_rows) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  const float kInf = __int_as_float(0x7f800000);
  extern __shared__ __align__(16) float shared[];
  constexpr int kSteps = kDepth / 8;
  float* tiles = shared + (kTileAlign - shared_address(shared) % kTileAlign) % kTileAlign / 4;
  float* biases = tiles + kStages * kRows * kDepth;  // per tile: ||y||^2 (L2) or 0, NaN past the split
  uint64_t* full = reinterpret_cast<uint64_t*>(biases + kStages * kRows);  // per stage: its tile is in
  uint64_t* empty = full + kStages;  // per stage: every selecting thread is done with its tile
  const QueryLists lists = QueryLists::place(reinterpret_cast<float*>(empty + kStages), kQueries);

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int group = lane / 4, member = lane % 4;  // the fragments' row / column within a lane group
  const int q0 = static_cast<int>(blockIdx.x) * kQueries;
  const int split = static_cast<int>(blockIdx.y);
  const int row_begin = min(n, split * split_rows);
  const int row_end = min(n, row_begin + split_rows);
  const int tile_count = (row_end - row_begin + kRows - 1) / kRows;

  if (tid == 0) {
    for (int i = 0; i < kStages; ++i) {
      // Every lane arrives itself, so each releases its own shared-memory accesses (the sanitizer's
      // racecheck sees no ordering through a __syncwarp before one lane's arrival).
      barrier_init(&full[i], kWarpSize);
      barrier_init(&empty[i], kWarps * kWarpSize);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp == kWarps) {
    // ---- the copying warp: tile t into stage t % kStages once every selecting warp is done with
    // tile t - kStages there: its rows (the tensor memory accelerator) and their biases (||y||^2 for
    // L2, else 0; NaN past the split: never offered), all asked by lane 0 and counted in bytes on
    // the stage's barrier, so no lane waits for memory: a full tile's norms come by a bulk copy
    // beside its rows (inner products: the zeros written here once). The split's last tile, when
    // partial (or norms not 16-byte aligned), has its biases written by the lanes first ----
    const bool bulk_norms = l2 && reinterpret_cast<uintptr_t>(norms) % 16 == 0;
    if (!l2)
      for (int i = lane; i < kStages * kRows; i += kWarpSize) biases[i] = 0.f;
    for (int t = 0; t < tile_count; ++t) {
      const int stage = t % kStages;
      if (t >= kStages) barrier_wait(&empty[stage], (t / kStages - 1) % 2);
      const int first = row_begin + t * kRows;
      float* stage_bias = biases + stage * kRows;
      const bool whole = first + kRows <= row_end;
      if (!whole || (l2 && !bulk_norms)) {
        for (int i = lane; i < kRows; i += kWarpSize)
          stage_bias[i] = first + i >= row_end ? __int_as_float(0x7fffffff) : l2 ? norms[first + i] : 0.f;
      }
      if (lane != 0) {
        barrier_arrive(&full[stage]);  // each lane releases the biases it wrote
      } else {
        const bool bulk = whole && bulk_norms;
        barrier_expect(&full[stage], kRows * kDepth * 4 + (bulk ? kRows * 4 : 0));
#pragma unroll
        for (int b = 0; b < kDepth / kBlockValues; ++b)
          copy_box(tiles + stage * kRows * kDepth + b * kBlockFloats, y, b * kBlockValues, first, &full[stage]);
        if (bulk) copy_bulk(stage_bias, norms + first, kRows * 4, &full[stage]);
      }
    }
    return;
  }

  // The warp's queries: its accumulator rows. Thread (group, member) holds queries group and
  // group + 8 of them, and values member and member + 4 of each step (the m16n8k8 A fragment).
  const int warp_query = warp * kWarpQueries;
  for (int q = warp_query; q < warp_query + kWarpQueries; ++q)
    lists.reset(q, q0 + q < nq, lane, start_bound(bounds, bounds_ld, q0 + q, nq));
  __syncwarp();  // the warp's lists are in place before any lane reads another lane's entries
  uint32_t a[kSteps][4];
#pragma unroll
  for (int s = 0; s < kSteps; ++s)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int q = q0 + warp_query + group + 8 * (i % 2), col = 8 * s + member + 4 * (i / 2);
      a[s][i] = q < nq && col < dim ? __float_as_uint(x[int64_t(q) * dim + col]) : 0u;
    }

  // Turns: warpgroup w multiplies after barrier 1 + w, then gives the other its turn. Warpgroup 0
  // starts; it takes one turn more than it is given in the loop (balanced after it).
  const int warpgroup = tid / kWarpgroupThreads;
  const int my_turn = 1 + warpgroup, their_turn = 2 - warpgroup;
  if (warpgroup == 1) turn_give(their_turn);

  const float alpha = l2 ? -2.f : -1.f;
  float acc[kAccumulators];
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) acc[i] = 0.f;
  for (int t = 0; t < tile_count; ++t) {
    const int stage = t % kStages;
    const float* tile = tiles + stage * kRows * kDepth;
    barrier_wait(&full[stage], t / kStages % 2);

    turn_wait(my_turn);
    pin(acc);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int s = 0; s < kSteps; ++s) multiply(acc, a[s], tile_descriptor(tile, s), s);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    turn_give(their_turn);

    // The tile's biases and the warp's limits, loaded while the products finish.
    const int tile_row = row_begin + t * kRows;
    const float* tile_bias = biases + stage * kRows + 2 * member;
    float2 bias[kRows / 8];
#pragma unroll
    for (int j = 0; j < kRows / 8; ++j) bias[j] = *reinterpret_cast<const float2*>(tile_bias + 8 * j);
    float limit[2];
    auto load_limits = [&] {
#pragma unroll
      for (int h = 0; h < 2; ++h) limit[h] = lists.limits[warp_query + group + 8 * h];
    };
    load_limits();
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    pin(acc);

    // ---- the tile's keys, in place of the products: acc[4 j + 2 h + e] is query group + 8 h of the
    // warp's, row 8 j + 2 member + e of the tile. Keys within their query's limit are offered; a thread
    // offers its kRows / 4 keys of a query only when their minimum is. Offers beyond a pending list's
    // room are refused, kept in `refused` and offered again once the warp has merged its full lists ----
#pragma unroll
    for (int j = 0; j < kRows / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        acc[4 * j + 2 * h] = fmaf(alpha, acc[4 * j + 2 * h], bias[j].x);
        acc[4 * j + 2 * h + 1] = fmaf(alpha, acc[4 * j + 2 * h + 1], bias[j].y);
      }
    // The thread is done with the stage (its products and biases): once every selecting thread is,
    // the copying warp may refill it.
    barrier_arrive(&empty[stage]);
    auto offer = [&](int j, int h, int e) {
      const float key = acc[4 * j + 2 * h + e];
      if (!(key <= limit[h])) return true;
      const int row = row_offset + tile_row + 8 * j + 2 * member + e;
      if (!allowed(filter, filter_bits, row)) return true;
      return lists.offer(warp_query + group + 8 * h, key, row);
    };
    // Each query's smallest key of the thread, as four independent chains (short latency).
    float smallest[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float chain[4] = {kInf, kInf, kInf, kInf};
#pragma unroll
      for (int j = 0; j < kRows / 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) chain[j % 2 * 2 + e] = fminf(chain[j % 2 * 2 + e], acc[4 * j + 2 * h + e]);
      smallest[h] = fminf(fminf(chain[0], chain[1]), fminf(chain[2], chain[3]));
    }
    // Most tiles offer nothing to any of the warp's queries: no list can have filled.
    if (!__any_sync(kFullWarp, smallest[0] <= limit[0] || smallest[1] <= limit[1])) continue;
    uint64_t refused = 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!(smallest[h] <= limit[h])) continue;
#pragma unroll
      for (int j = 0; j < kRows / 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (!offer(j, h, e)) refused |= uint64_t(1) << (4 * j + 2 * h + e);
    }
    for (;;) {
      __syncwarp();  // every offer is in
      // Lane l < 16 looks at the warp's query l.
      const bool full_list = lane < kWarpQueries && lists.counts[warp_query + lane] >= kPending;
      for (unsigned mask = __ballot_sync(kFullWarp, full_list); mask != 0; mask &= mask - 1)
        lists.merge(warp_query + __ffs(mask) - 1, kc, lane);
      __syncwarp();  // the merged limits are in
      if (!__any_sync(kFullWarp, refused != 0)) break;
      load_limits();
      const uint64_t again = refused;
      refused = 0;
#pragma unroll
      for (int j = 0; j < kRows / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const uint64_t bit = uint64_t(1) << (4 * j + 2 * h + e);
            if ((again & bit) != 0 && !offer(j, h, e)) refused |= bit;
          }
    }
  }
  if (warpgroup == 0) turn_wait(my_turn);  // the turn warpgroup 1 gave last

  // ---- each of the warp's queries: its kc best of the split ----
  for (int q = warp_query; q < warp_query + kWarpQueries && q0 + q < nq; ++q) {
    const int64_t out = (int64_t(q0 + q) * splits + split) * kc;
    lists.write(q, kc, lane, out_keys + out, out_rows + out);
  }
#else
  __trap();  // launch_tf32_select takes this kernel only on devices of compute capability 9.0
#endif
}

// The base (n x dim floats, row-major) as the kernel's copies read it: boxes of kRows rows x
// kBlockValues values, 128-byte swizzle, zeros outside. The driver's encoder is looked up at run time
// (the library does not link the driver).
CUtensorMap base_map(const float* base, int64_t n, int64_t dim) {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    QV_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    require(fn != nullptr && found == cudaDriverEntryPointSuccess,
            "tf32_select_sm90a: the driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  CUtensorMap map;
  const cuuint64_t extent[2] = {cuuint64_t(dim), cuuint64_t(n)};
  const cuuint64_t stride[1] = {cuuint64_t(dim) * 4};
  const cuuint32_t box[2] = {kBlockValues, kRows};
  const cuuint32_t step[2] = {1, 1};
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(base), extent, stride, box,
                            step, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  require(r == CUDA_SUCCESS, "tf32_select_sm90a: cuTensorMapEncodeTiled failed (", int(r), ") for n = ", n,
          ", dim = ", dim);
  return map;
}

}  // namespace

size_t tf32_select_sm90a_shared_bytes(int64_t dim) { return shared_bytes(dim); }

void launch_tf32_select_sm90a(const float* queries, int64_t nq, const float* base, const float* base_norms,
                              int64_t row_offset, int64_t n, int64_t dim, int64_t kc, bool l2, const uint8_t* filter,
                              int64_t filter_bits, int64_t splits, const float* bounds, int64_t bounds_ld,
                              float* keys, int32_t* rows, cudaStream_t stream) {
  decltype(&tf32_select_sm90a_kernel<kDepthStep>) kernel = nullptr;
  switch (padded_depth(dim)) {
    case 32: kernel = tf32_select_sm90a_kernel<32>; break;
    case 64: kernel = tf32_select_sm90a_kernel<64>; break;
    case 96: kernel = tf32_select_sm90a_kernel<96>; break;
    case 128: kernel = tf32_select_sm90a_kernel<128>; break;
  }
  require(kernel != nullptr, "tf32_select_sm90a: dim = ", dim, " is above ", kTf32SelectMaxDim);
  const CUtensorMap map = base_map(base, n, dim);
  const size_t shared = shared_bytes(dim);
  QV_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  const int64_t split_rows = ceil_div(ceil_div(n, splits), kRows) * kRows;
  const dim3 grid(static_cast<unsigned>(ceil_div(nq, kQueries)), static_cast<unsigned>(splits));
  kernel<<<grid, kThreads, shared, stream>>>(
      queries, static_cast<int>(nq), map, base_norms, static_cast<int>(n), static_cast<int>(dim),
      static_cast<int>(kc), l2, filter, filter_bits, static_cast<int>(row_offset), static_cast<int>(split_rows),
      static_cast<int>(splits), bounds, bounds_ld, keys, rows);
  QV_LAUNCH_CHECK("tf32_select_sm90a_kernel");
}

}  // namespace quiver::gpu
