// The selection kernel, instantiated once per k bucket and id type by the select_k*.cu files.
//
// A task is one chunk of one row. Its warps (1 for WarpSelect, up to 8 for BlockSelect) stream the
// chunk's keys (floats, or 16-bit values converted on load) with coalesced 16-byte (8-byte) loads,
// each warp into its own WarpSelect queues in registers;
// a block's warps then merge their warp queues pairwise through shared memory (the only use of it),
// and the first warp writes the k results, sorted.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include <cuda_fp16.h>

#include "cuda/core/error.h"
#include "cuda/select/block_merge.cuh"
#include "cuda/select/select_launch.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu::detail {

// Keys reach a warp through shared memory: each lane copies its 16-byte slots with cp.async
// (kStages groups in flight), so the bytes in flight do not cost registers, which the warp queue
// needs. A lane only ever reads the slots it copied itself, so no barrier is needed between lanes.
constexpr int kSlotsPerGroup = 2;            // 16-byte slots per lane per group: 8 keys
constexpr int kGroupKeys = 4 * kSlotsPerGroup;
constexpr int kStages = 4;                   // groups in flight per warp
constexpr int kSlotBytes = 16;

// Shared memory of one warp's staging: kStages groups of 32 lanes' slots, keys then bias.
constexpr int staging_bytes_per_warp(bool bias) {
  return kStages * kSlotsPerGroup * kWarpSize * kSlotBytes * (bias ? 2 : 1);
}

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copies a whole 16-byte aligned slot. (Partial slots take copy_slot4x4: a 16-byte copy with a smaller
// source size counts as a 16-byte read for compute-sanitizer, past the end of the last row.)
__device__ __forceinline__ void copy_slot16(void* dst, const float* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(dst)), "l"(src));
}

// The same for rows that are not 16-byte aligned: four 4-byte copies.
__device__ __forceinline__ void copy_slot4x4(float* dst, const float* src, int valid) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(dst + i)),
                 "l"(i < valid ? src + i : src), "r"(i < valid ? 4 : 0));
  }
}

__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }

template <int kPending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Starts the copies of one lane's slots of a group, the first at column `col` of the chunk (which
// has `span` columns), into the stage at `keys` / `bias` (the lane's slot of u = 0). Offsets are
// 32-bit: a chunk has fewer than 2^31 columns.
__device__ __forceinline__ void issue_group(float4* keys, float4* bias, const float* x, const float* b,
                                            bool vec4, bool full, int col, int span) {
#pragma unroll
  for (int u = 0; u < kSlotsPerGroup; ++u, col += 4 * kWarpSize) {
    const int valid = full ? 4 : max(0, min(4, span - col));
    if (vec4 && valid == 4) {
      copy_slot16(keys + u * kWarpSize, x + col);
      if (b != nullptr) copy_slot16(bias + u * kWarpSize, b + col);
    } else {  // unaligned rows, and the last slots of a row: no 16-byte read past the row's end
      copy_slot4x4(reinterpret_cast<float*>(keys + u * kWarpSize), valid > 0 ? x + col : x, valid);
      if (b != nullptr) copy_slot4x4(reinterpret_cast<float*>(bias + u * kWarpSize), valid > 0 ? b + col : b, valid);
    }
  }
}

// 16-bit keys: the same columns as floats (two slots of 4 keys, 128 columns apart), each slot an
// 8-byte copy into the first half of a 16-byte one; the bias exactly as for floats.
__device__ __forceinline__ void copy_slot8(void* dst, const uint16_t* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(shared_address(dst)), "l"(src), "r"(bytes));
}

__device__ __forceinline__ void issue_group16(float4* keys, float4* bias, const uint16_t* x, const float* b,
                                              bool full, int col, int span) {
#pragma unroll
  for (int u = 0; u < kSlotsPerGroup; ++u, col += 4 * kWarpSize) {
    const int valid = full ? 4 : max(0, min(4, span - col));
    copy_slot8(keys + u * kWarpSize, valid > 0 ? x + col : x, 2 * valid);
    if (b == nullptr) continue;
    if (valid == 4) {
      copy_slot16(bias + u * kWarpSize, b + col);
    } else {  // the bias's last slots: no 16-byte read past its end
      copy_slot4x4(reinterpret_cast<float*>(bias + u * kWarpSize), valid > 0 ? b + col : b, valid);
    }
  }
}

// The two 16-bit values of a 32-bit word as floats (lo: the first): bf16 is a float's upper half;
// fp16 converts exactly (infinities and NaNs included; on sm_80+ one HADD2.F32 per value).
template <bool KBF>
__device__ __forceinline__ float half_word_value(unsigned w, bool hi) {
  if (KBF) return __uint_as_float(hi ? (w & 0xffff0000u) : (w << 16));
  return __half2float(__ushort_as_half(static_cast<unsigned short>(hi ? (w >> 16) : (w & 0xffffu))));
}

__device__ __forceinline__ float component(const float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

__device__ __forceinline__ bool filter_allows(const uint8_t* filter, int64_t bits, int64_t id) {
  return id >= 0 && id < bits && ((__ldg(filter + (id >> 3)) >> (id & 7)) & 1);
}

__device__ __forceinline__ unsigned warp_or(unsigned x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_or_sync(kFullWarp, x);
#else
#pragma unroll
  for (int d = kWarpSize / 2; d > 0; d /= 2) x |= __shfl_xor_sync(kFullWarp, x, d);
  return x;
#endif
}

// Column of a lane's key e of a group, from the lane's first column: two slots 128 columns apart.
__device__ __forceinline__ int key_offset(int e) { return (e / 4) * 4 * kWarpSize + (e % 4); }

// One task (a chunk of a row) by the `wpr` warps of a row group; `sub` is this warp's index in it.
// K16: the keys are 16-bit (p.keys16), bf16 when KBF, else fp16.
template <int KR, int T, typename V, bool K16, bool KBF>
__device__ __forceinline__ void select_task(const SelectParams<V>& p, int64_t task, int sub, float4* stage_keys,
                                            float4* stage_bias, unsigned char* shared) {
  using M = WarpLanes<V, (KR >= 16)>;
  constexpr int K = KR * kWarpSize;
  constexpr V kMissing = SentinelValue<V>::value;
  constexpr int kStageSlots = kSlotsPerGroup * kWarpSize;  // float4 slots of one stage of a warp
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int wpr = p.warps_per_row;
  // (64-bit division is a subroutine call; one chunk per row, the common case, needs none.)
  const int64_t row = p.chunks == 1 ? task : task / p.chunks;
  const int64_t c0 = p.chunks == 1 ? 0 : (task % p.chunks) * p.chunk_len;
  const int span = static_cast<int>(min(p.cols, c0 + p.chunk_len) - c0);

  WarpSelect<M, KR, T> ws;
  ws.reset(static_cast<int>(p.k));
  if (p.prev_keys != nullptr && sub == 0) {
#pragma unroll
    for (int r = 0; r < KR; ++r) {
      const int64_t e = int64_t(r) * kWarpSize + lane;
      if (e < p.k) {
        ws.wk[r] = p.prev_scale * p.prev_keys[row * p.k + e];
        ws.wv[r] = p.prev_ids[row * p.k + e];
      }
    }
    ws.refresh_limit();
  }

  const float* x = K16 ? nullptr : p.keys + row * p.ld + c0;
  const uint16_t* x16 = K16 ? static_cast<const uint16_t*>(p.keys16) + row * p.ld + c0 : nullptr;
  const float* bias = p.bias != nullptr ? p.bias + c0 : nullptr;
  const V* row_ids = p.ids != nullptr ? p.ids + row * p.ld + c0 : nullptr;
  const int64_t id_base = p.id_base + c0;

  // Lane `lane` owns, in group g, the slots (4 consecutive columns) first + g*step + u*32 + lane,
  // u < kSlotsPerGroup; the warps of a row interleave their groups. Group g lands in stage g % kStages.
  const int slots = (span + 3) / 4;
  const int first = sub * kStageSlots;
  const int step = wpr * kStageSlots;
  const int groups = first < slots ? (slots - first + step - 1) / step : 0;
  auto group_full = [&](int g) { return 4 * (first + g * step + kStageSlots) <= span; };
  auto group_col = [&](int g) { return 4 * (first + g * step + lane); };  // this lane's first column
  auto issue = [&](int g, int stage) {
    if (K16) {
      issue_group16(stage_keys + stage * kStageSlots + lane, stage_bias + stage * kStageSlots + lane, x16, bias,
                    group_full(g), group_col(g), span);
    } else {
      issue_group(stage_keys + stage * kStageSlots + lane, stage_bias + stage * kStageSlots + lane, x, bias, p.vec4,
                  group_full(g), group_col(g), span);
    }
  };
  for (int g = 0; g < kStages - 1; ++g) {
    if (g < groups) issue(g, g);
    commit_copies();
  }

  // A group is rejected with one vote when none of its keys can beat the limit, the common case once
  // the queue has filled. Otherwise only the positions where some lane has a candidate are offered,
  // in a loop that is not unrolled, which keeps the single call of the merge networks below (they
  // are inlined where called, and large). The round after the last group makes the final merge go
  // through that same call.
  for (int g = 0; g <= groups; ++g) {
    const bool last_round = g == groups;
    float key[kGroupKeys];
    bool maybe = false;
    if (!last_round) {
      if (g + kStages - 1 < groups) {
        const int next = g + kStages - 1;
        issue(next, next % kStages);
      }
      commit_copies();
      wait_copies<kStages - 1>();  // this lane's copies of group g have landed
      const int stage = g % kStages;
      float low = kSentinelKey;
      if (K16) {
#pragma unroll
        for (int u = 0; u < kSlotsPerGroup; ++u) {
          const float4 v = stage_keys[stage * kStageSlots + u * kWarpSize + lane];
#pragma unroll
          for (int i = 0; i < 4; ++i)
            key[4 * u + i] = half_word_value<KBF>(__float_as_uint(component(v, i / 2)), i & 1);
        }
        if (bias != nullptr) {
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const float4 b = stage_bias[stage * kStageSlots + u * kWarpSize + lane];
#pragma unroll
            for (int i = 0; i < 4; ++i) key[4 * u + i] = fmaf(p.in_scale, key[4 * u + i], component(b, i));
          }
        } else {
#pragma unroll
          for (int e = 0; e < kGroupKeys; ++e) key[e] = p.in_scale * key[e];
        }
      } else {
#pragma unroll
        for (int u = 0; u < kSlotsPerGroup; ++u) {
          const float4 v = stage_keys[stage * kStageSlots + u * kWarpSize + lane];
          if (bias != nullptr) {
            const float4 b = stage_bias[stage * kStageSlots + u * kWarpSize + lane];
#pragma unroll
            for (int i = 0; i < 4; ++i) key[4 * u + i] = fmaf(p.in_scale, component(v, i), component(b, i));
          } else {
#pragma unroll
            for (int i = 0; i < 4; ++i) key[4 * u + i] = p.in_scale * component(v, i);
          }
        }
      }
      if (!group_full(g)) {  // columns past the end hold zeros: make them never pass
        const int col = group_col(g);
#pragma unroll
        for (int e = 0; e < kGroupKeys; ++e)
          if (col + key_offset(e) >= span) key[e] = kSentinelKey;
      }
#pragma unroll
      for (int e = 0; e < kGroupKeys; ++e) low = fminf(low, key[e]);  // NaN keys are ignored here
      maybe = low <= ws.limit_k;
    }
    if (!M::any(maybe) && !last_round) continue;

    unsigned candidates = 0;  // this lane's positions that may beat the limit
    if (!last_round) {
      const int col = group_col(g);
#pragma unroll
      for (int e = 0; e < kGroupKeys; ++e)
        candidates |= (key[e] <= ws.limit_k && col + key_offset(e) < span ? 1u : 0u) << e;
    }
    unsigned todo = warp_or(candidates);
    bool final_merge = last_round;
    while (todo != 0 || final_merge) {
      bool full;
      if (todo != 0) {
        const int e = __ffs(todo) - 1;  // the same position in every lane
        todo &= todo - 1;
        float k = key[0];
#pragma unroll
        for (int j = 1; j < kGroupKeys; ++j) k = (e == j) ? key[j] : k;  // static register indices
        const int col = group_col(g) + key_offset(e);
        const bool valid = col < span;
        V id = kMissing;
        if (valid) id = row_ids != nullptr ? row_ids[col] : V(id_base + col);
        if (!valid || !(k == k)) {  // NaN keys never enter a queue
          k = kSentinelKey;
          id = kMissing;
        }
        if (p.filter != nullptr && ws.accepts(k, id) && !filter_allows(p.filter, p.filter_bits, id)) {
          k = kSentinelKey;
          id = kMissing;
        }
        full = ws.insert(k, id);
      } else {
        final_merge = false;
        full = ws.has_queued();
      }
      if (full) ws.merge_thread_queues();
    }
  }
  wait_copies<0>();

  if (wpr > 1) {
    // BlockSelect: the warp queues merge into warp 0's (one task per block here, so sub is the slot).
    __syncthreads();  // every warp is done with its staging memory, reused here
    float* sk = reinterpret_cast<float*>(shared);
    V* sv = reinterpret_cast<V*>(shared + sizeof(float) * K * wpr);
    merge_block_queues(ws, sk, sv, sub, sub, wpr, lane);  // ends on a barrier: staging is free again
  }

  if (sub == 0) {
    float* out_k = p.out_keys + task * p.k;
    V* out_v = p.out_ids + task * p.k;
#pragma unroll
    for (int r = 0; r < KR; ++r) {
      const int64_t e = int64_t(r) * kWarpSize + lane;
      if (e < p.k) {
        out_k[e] = p.out_scale * ws.wk[r];
        out_v[e] = (p.missing_minus_one && ws.wv[r] == kMissing) ? V(-1) : ws.wv[r];
      }
    }
  }
}

// A persistent grid, sized to what the device holds at once: each block takes tasks in turn (one
// per warp with WarpSelect, one per block with BlockSelect), so no partial last wave idles the GPU.
template <int KR, int T, typename V, bool K16, bool KBF>
__global__ void __launch_bounds__(kSelectMaxThreads) select_kernel(const SelectParams<V> p) {
  extern __shared__ __align__(16) unsigned char shared[];
  const int warp = threadIdx.x / kWarpSize;
  const int warps_in_block = blockDim.x / kWarpSize;
  const int wpr = p.warps_per_row;
  const int per_block = warps_in_block / wpr;
  float4* stage_keys = reinterpret_cast<float4*>(shared) + size_t(warp) * kStages * kSlotsPerGroup * kWarpSize;
  float4* stage_bias =
      reinterpret_cast<float4*>(shared) + size_t(warps_in_block + warp) * kStages * kSlotsPerGroup * kWarpSize;
  // The loop bound is the same for the whole block, so its barriers (BlockSelect) are reached by all.
  for (int64_t base = int64_t(blockIdx.x) * per_block; base < p.tasks; base += int64_t(gridDim.x) * per_block) {
    const int64_t task = base + warp / wpr;
    if (task < p.tasks) select_task<KR, T, V, K16, KBF>(p, task, warp % wpr, stage_keys, stage_bias, shared);
  }
}

// Threads and shared memory of a launch with `wpr` warps per row.
template <int KR, typename V>
void launch_shape(int wpr, bool bias, int* threads, size_t* shared) {
  constexpr int K = KR * kWarpSize;
  *threads = wpr == 1 ? kSelectRowsPerBlock * kWarpSize : wpr * kWarpSize;
  const size_t staging = size_t(*threads / kWarpSize) * staging_bytes_per_warp(bias);
  const size_t merging = wpr == 1 ? 0 : size_t(wpr) * K * (sizeof(float) + sizeof(V));
  *shared = staging > merging ? staging : merging;
}

template <int KR, int T, typename V, bool K16, bool KBF>
void launch_kernel(const SelectParams<V>& p, cudaStream_t stream) {
  int device = 0, sms = 0;
  QV_CUDA_CHECK(cudaGetDevice(&device));
  QV_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // Rows are not split further to even out the last round of a persistent grid: tried (2 or 4 warps
  // per row when that shortens the rounds), it lost 40% at k = 100: each warp then admits more
  // candidates, and BlockSelect's smaller blocks held fewer warps per multiprocessor. Splitting only
  // the rows of a short last round into two independent chunks (merged after) gained 1% at k = 100
  // (2.42 -> 2.39 ms), and compiling the small buckets for 40 warps a multiprocessor (48 registers,
  // spills) none: neither kept.
  const int wpr = p.warps_per_row;
  int threads = 0;
  size_t shared = 0;
  launch_shape<KR, V>(wpr, p.bias != nullptr, &threads, &shared);
  const int64_t tasks_per_block = wpr == 1 ? kSelectRowsPerBlock : 1;
  int64_t blocks = (p.tasks + tasks_per_block - 1) / tasks_per_block;
  if (shared > 48 * 1024) {
    // Hopper gives a block up to 227 KB, but only to kernels that ask.
    QV_CUDA_CHECK(cudaFuncSetAttribute(select_kernel<KR, T, V, K16, KBF>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(shared)));
  }
  // Blocks resident per multiprocessor, asked once per device and shape (wpr, bias), as
  // ivf/row_select_kernel.cuh does: the query costs about a launch.
  constexpr int kDevices = 64, kShapes = 2 * kSelectMaxWarpsPerRow;
  static std::atomic<int> resident_by_shape[kDevices][kShapes];
  const int shape = 2 * (wpr - 1) + (p.bias != nullptr ? 1 : 0);  // wpr is 1 .. kSelectMaxWarpsPerRow
  const bool cached = device < kDevices && wpr >= 1 && wpr <= kSelectMaxWarpsPerRow;
  int resident = cached ? resident_by_shape[device][shape].load(std::memory_order_relaxed) : 0;
  if (resident == 0) {
    QV_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, select_kernel<KR, T, V, K16, KBF>, threads, shared));
    resident = std::max(resident, 1);
    if (cached) resident_by_shape[device][shape].store(resident, std::memory_order_relaxed);
  }
  blocks = std::min<int64_t>(blocks, int64_t(resident) * sms);
  select_kernel<KR, T, V, K16, KBF><<<dim3(static_cast<unsigned>(blocks)), threads, shared, stream>>>(p);
  QV_LAUNCH_CHECK("select_kernel");
}

template <int KR, int T, typename V>
void launch_select(const SelectParams<V>& p, cudaStream_t stream) {
  // 16-bit keys come with int32 ids only (the exact search's tiles): no int64 instantiation.
  if constexpr (sizeof(V) == sizeof(int32_t)) {
    if (p.keys16 != nullptr && p.bf16_keys) return launch_kernel<KR, T, V, true, true>(p, stream);
    if (p.keys16 != nullptr) return launch_kernel<KR, T, V, true, false>(p, stream);
  }
  launch_kernel<KR, T, V, false, false>(p, stream);
}

}  // namespace quiver::gpu::detail

// One bucket's instantiations, for both id types.
#define QV_INSTANTIATE_SELECT(KR, T)                                                               \
  namespace quiver::gpu::detail {                                                                  \
  template void launch_select<KR, T, int32_t>(const SelectParams<int32_t>&, cudaStream_t);        \
  template void launch_select<KR, T, int64_t>(const SelectParams<int64_t>&, cudaStream_t);        \
  }
