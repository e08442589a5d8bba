// The selection kernel, instantiated once per k bucket and id type by the select_k*.cu files.
//
// A task is one chunk of one row. Its warps (1 for WarpSelect, up to 8 for BlockSelect) stream the
// chunk's keys (floats, or 16-bit values) with coalesced 16-byte copies into shared memory, each warp
// into its own WarpSelect queues in registers; a block's warps then merge their warp queues pairwise
// through shared memory, and the first warp writes the k results, sorted.
//
// Each lane first tests its group of keys with one conservative bound (the smallest key cannot beat
// the limit: one vote rejects the group, the common case once the queue has filled); only groups that
// may hold a candidate are converted key by key. With the threshold pre-filter (select_prefilter.h)
// the limit starts at a sampled threshold instead of +inf, so that holds from the row's start.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/core/async_copy.cuh"
#include "cuda/core/error.h"
#include "cuda/select/block_merge.cuh"
#include "cuda/select/select_launch.h"
#include "cuda/select/select_prefilter.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu::detail {

// Keys reach a warp through shared memory: each lane copies its 16-byte slots with cp.async
// (kStages groups in flight), so the bytes in flight do not cost registers, which the warp queue
// needs. A lane only ever reads the slots it copied itself, so no barrier is needed between lanes.
constexpr int kSlotsPerGroup = 2;            // 16-byte slots per lane per group
constexpr int kStages = 4;                   // groups in flight per warp
constexpr int kSlotBytes = 16;

// Columns of a slot (4 floats or 8 16-bit keys) and of a lane's group.
template <bool K16>
QV_CONSTEXPR int slot_cols() {
  return K16 ? 8 : 4;
}
template <bool K16>
QV_CONSTEXPR int group_keys() {
  return kSlotsPerGroup * slot_cols<K16>();
}
// A 16-bit NaN in both fp16 and bf16: pads a row's last partial slot (ignored by the group test,
// and its columns are masked before the selection).
constexpr unsigned kNanHalfBits = 0x7fffu;

// Shared memory of one warp's staging: kStages groups of 32 lanes' slots, keys then bias.
constexpr int staging_bytes_per_warp(bool bias) {
  return kStages * kSlotsPerGroup * kWarpSize * kSlotBytes * (bias ? 2 : 1);
}

// A 16-byte slot of a row that is not 16-byte aligned, or a row's partial last slot: four 4-byte
// copies (a 16-byte copy with a smaller source size counts as a 16-byte read for compute-sanitizer,
// past the end of the last row).
__device__ __forceinline__ void copy_slot4x4(float* dst, const float* src, int valid) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(dst + i)),
                 "l"(i < valid ? src + i : src), "r"(i < valid ? 4 : 0));
  }
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

__device__ __forceinline__ void copy_word4(void* dst, const float* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(shared_address(dst)), "l"(src));
}

// 16-bit keys: a slot is 8 consecutive keys (one 16-byte copy), the two slots of a group 256 columns
// apart. A partial slot (a row's last) is read with plain loads and padded with NaN: a 16-byte copy
// with a smaller source size counts as a 16-byte read for compute-sanitizer. With bias bounds, each
// slot's bound is a 4-byte copy into `bounds` (the lane's word of u = 0 in the bias stage).
__device__ __forceinline__ void issue_group16(float4* keys, float* bounds, const uint16_t* x, const float* bound,
                                              bool full, int col, int span) {
#pragma unroll
  for (int u = 0; u < kSlotsPerGroup; ++u, col += slot_cols<true>() * kWarpSize) {
    const int valid = full ? 8 : max(0, min(8, span - col));
    if (valid == 8) {
      copy_slot16(keys + u * kWarpSize, x + col);
    } else {
      unsigned w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const unsigned lo = 2 * i < valid ? unsigned(x[col + 2 * i]) : kNanHalfBits;
        const unsigned hi = 2 * i + 1 < valid ? unsigned(x[col + 2 * i + 1]) : kNanHalfBits;
        w[i] = lo | (hi << 16);
      }
      keys[u * kWarpSize] = make_float4(__uint_as_float(w[0]), __uint_as_float(w[1]), __uint_as_float(w[2]),
                                        __uint_as_float(w[3]));
    }
    if (bound != nullptr && valid > 0) copy_word4(bounds + u * kWarpSize, bound + col / slot_cols<true>());
  }
}

// The smallest (largest when `neg`) of a slot's 8 16-bit keys, as a float: packed 16-bit min / max
// (NaNs ignored; NaN only when all 8 are NaN), then one conversion. Exact: both are exact.
template <bool KBF>
__device__ __forceinline__ float slot_extreme(const float4& slot, bool neg) {
  using Pair = std::conditional_t<KBF, __nv_bfloat162, __half2>;
  Pair a, b, c, d;
  memcpy(&a, &slot.x, 4);
  memcpy(&b, &slot.y, 4);
  memcpy(&c, &slot.z, 4);
  memcpy(&d, &slot.w, 4);
  const Pair m = neg ? __hmax2(__hmax2(a, b), __hmax2(c, d)) : __hmin2(__hmin2(a, b), __hmin2(c, d));
  const float lo = __low2float(m), hi = __high2float(m);
  return neg ? fmaxf(lo, hi) : fminf(lo, hi);
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

// Column of a lane's key e of a group, from the lane's first column: two slots 32 slots apart.
template <bool K16>
__device__ __forceinline__ int key_offset(int e) {
  constexpr int kCols = slot_cols<K16>();
  return (e / kCols) * kCols * kWarpSize + (e % kCols);
}

// Lowers the limit to the pre-filter's threshold t (keys equal to t still pass: its value is the
// sentinel's, above every real id) when t is below it.
template <class WS, typename V>
__device__ __forceinline__ void clamp_limit(WS& ws, float t) {
  constexpr V kMissing = SentinelValue<V>::value;
  if (t < ws.limit_k || (t == ws.limit_k && ws.limit_v == kMissing)) {
    ws.limit_k = t;
    ws.limit_v = kMissing;
  }
}

// The k-th smallest (1 <= k <= 32) of the warp's 32 values, none NaN: a bitonic sort across the lanes.
__device__ __forceinline__ float warp_kth_smallest(float v, int k) {
  const int lane = threadIdx.x & (kWarpSize - 1);
#pragma unroll
  for (int size = 2; size <= kWarpSize; size <<= 1) {
#pragma unroll
    for (int stride = size / 2; stride > 0; stride >>= 1) {
      const float other = __shfl_xor_sync(kFullWarp, v, stride);
      const bool ascending = (lane & size) == 0, lower = (lane & stride) == 0;
      v = lower == ascending ? fminf(v, other) : fmaxf(v, other);
    }
  }
  return __shfl_sync(kFullWarp, v, k - 1);
}

// One task (a chunk of a row) by the `wpr` warps of a row group; `sub` is this warp's index in it.
// K16: the keys are 16-bit (p.keys16), bf16 when KBF, else fp16.
template <int KR, int T, typename V, bool K16, bool KBF>
__device__ __forceinline__ void select_task(const SelectParams<V>& p, int64_t task, int sub, float4* stage_keys,
                                            float4* stage_bias, unsigned char* shared) {
  using M = WarpLanes<V, (KR >= 16)>;
  constexpr int K = KR * kWarpSize;
  constexpr V kMissing = SentinelValue<V>::value;
  constexpr int kStageSlots = kSlotsPerGroup * kWarpSize;  // float4 slots of one stage of a warp
  constexpr int kCols = slot_cols<K16>();
  constexpr int kKeys = group_keys<K16>();
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int wpr = p.warps_per_row;
  // (64-bit division is a subroutine call; one chunk per row, the common case, needs none.)
  const int64_t row = p.chunks == 1 ? task : task / p.chunks;
  const int64_t c0 = p.chunks == 1 ? 0 : (task % p.chunks) * p.chunk_len;
  const int span = static_cast<int>(min(p.cols, c0 + p.chunk_len) - c0);

  const float* x = K16 ? nullptr : p.keys + row * p.ld + c0;
  const uint16_t* x16 = K16 ? static_cast<const uint16_t*>(p.keys16) + row * p.ld + c0 : nullptr;
  const float* bias = p.bias != nullptr ? p.bias + c0 : nullptr;
  // (c0 is a multiple of kChunkAlign, so of a bound slot's 8 columns.)
  const float* bound = K16 && bias != nullptr && p.bias_bound != nullptr ? p.bias_bound + c0 / kCols : nullptr;
  const V* row_ids = p.ids != nullptr ? p.ids + row * p.ld + c0 : nullptr;
  const int64_t id_base = p.id_base + c0;
  const bool neg = p.in_scale < 0.f;  // scaled keys fall as stored values rise

  // The pre-filter's threshold (+inf: none).
  const float seed = p.seeds != nullptr && wpr == 1 ? p.seeds[row] : kSentinelKey;

  // Lane `lane` owns, in group g, the slots (kCols consecutive columns) first + g*step + u*32 + lane,
  // u < kSlotsPerGroup; the warps of a row interleave their groups. Group g lands in stage g % kStages.
  const int slots = (span + kCols - 1) / kCols;
  const int first = sub * kStageSlots;
  const int step = wpr * kStageSlots;
  const int groups = first < slots ? (slots - first + step - 1) / step : 0;
  auto group_full = [&](int g) { return kCols * (first + g * step + kStageSlots) <= span; };
  auto group_col = [&](int g) { return kCols * (first + g * step + lane); };  // this lane's first column
  auto issue = [&](int g, int stage) {
    if (K16) {
      issue_group16(stage_keys + stage * kStageSlots + lane,
                    reinterpret_cast<float*>(stage_bias + stage * kStageSlots) + lane, x16, bound, group_full(g),
                    group_col(g), span);
    } else {
      issue_group(stage_keys + stage * kStageSlots + lane, stage_bias + stage * kStageSlots + lane, x, bias, p.vec4,
                  group_full(g), group_col(g), span);
    }
  };

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
  const bool seeded = seed < kSentinelKey;
  if (seeded) clamp_limit<WarpSelect<M, KR, T>, V>(ws, seed);

  for (int g = 0; g < kStages - 1; ++g) {
    if (g < groups) issue(g, g);
    commit_copies();
  }

  // Float keys, k <= 32, one warp a row, no filter: the k-th smallest of the lanes' smallest keys in
  // the groups already staged bounds the k best from above (k lanes hold a key at or below it), so
  // the limit starts there instead of at +inf. On short rows (k-means: a thousand centroids) most
  // keys of the first groups were otherwise offered to the queue while it filled. The result is the
  // same: keys equal to the bound still pass, and k keys at or below it exist.
  float limit_seed = seed;
  if (!K16 && KR == 1 && !seeded && wpr == 1 && p.filter == nullptr && groups > 0) {
    wait_copies<0>();  // this lane's staged groups (each lane reads only its own slots)
    float low = kSentinelKey;
    for (int g = 0; g < min(groups, kStages - 1); ++g) {
#pragma unroll
      for (int u = 0; u < kSlotsPerGroup; ++u) {
        const float4 v = stage_keys[g * kStageSlots + u * kWarpSize + lane];
        const float4 b = bias != nullptr ? stage_bias[g * kStageSlots + u * kWarpSize + lane] : float4{};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float key = bias != nullptr ? fmaf(p.in_scale, component(v, i), component(b, i))
                                            : p.in_scale * component(v, i);
          if (group_col(g) + u * kCols * kWarpSize + i < span) low = fminf(low, key);  // NaN ignored
        }
      }
    }
    const float t = warp_kth_smallest(low, static_cast<int>(p.k));
    if (t < kSentinelKey) {
      limit_seed = t;
      clamp_limit<WarpSelect<M, KR, T>, V>(ws, limit_seed);
    }
  }
  const bool clamped = limit_seed < kSentinelKey;

  // A group is rejected with one vote when no lane's bound can beat the limit. Otherwise the group
  // is converted key by key, in parts of 8 keys a lane (16-bit keys: one slot a part, re-read from
  // the stage, which keeps registers few), and only the positions where some lane has a candidate
  // are offered, in a loop that is not unrolled, which keeps the single call of the merge networks
  // below (they are inlined where called, and large). The round after the last group makes the
  // final merge go through that same call.
  for (int g = 0; g <= groups; ++g) {
    const bool last_round = g == groups;
    const int stage = g % kStages;
    const int col = group_col(g);
    unsigned pass_bits = 0;  // bit u: slot u of this lane may hold a candidate (16-bit keys)
    if (!last_round) {
      if (g + kStages - 1 < groups) {
        const int next = g + kStages - 1;
        issue(next, next % kStages);
      }
      commit_copies();
      wait_copies<kStages - 1>();  // this lane's copies of group g have landed
      if (K16) {
        // Each slot's bound: scale * (its smallest value) + (its bias's bound). A bound of NaN
        // passes (all keys NaN, or inf - inf): the exact keys decide.
#pragma unroll
        for (int u = 0; u < kSlotsPerGroup; ++u) {
          const float ext = slot_extreme<KBF>(stage_keys[stage * kStageSlots + u * kWarpSize + lane], neg);
          float lb = -kSentinelKey;  // a bias without bounds: no bound
          if (bias == nullptr) {
            lb = p.in_scale * ext;
          } else if (bound != nullptr) {
            lb = fmaf(p.in_scale, ext,
                      reinterpret_cast<const float*>(stage_bias + stage * kStageSlots)[u * kWarpSize + lane]);
          }
          pass_bits |= (lb > ws.limit_k ? 0u : 1u) << u;
        }
        if (!M::any(pass_bits != 0)) continue;
      } else if (bias == nullptr) {
        // Exact here: scaling is monotone, so the group's smallest key is scale * (its smallest
        // value), or scale * (its largest) when the scale is negative.
        float ext = stage_keys[stage * kStageSlots + lane].x;
#pragma unroll
        for (int u = 0; u < kSlotsPerGroup; ++u) {
          const float4 v = stage_keys[stage * kStageSlots + u * kWarpSize + lane];
#pragma unroll
          for (int i = 0; i < 4; ++i) ext = neg ? fmaxf(ext, component(v, i)) : fminf(ext, component(v, i));
        }
        if (!M::any(!(p.in_scale * ext > ws.limit_k))) continue;
      }
    }

    constexpr int kParts = K16 ? kSlotsPerGroup : 1;
    constexpr int kPartKeys = kKeys / kParts;
    // Column of a lane's key e of a part, from the lane's first column of the group.
    auto offset = [&](int part, int e) { return K16 ? part * kCols * kWarpSize + e : key_offset<K16>(e); };
#pragma unroll 1
    for (int part = 0; part < (last_round ? 1 : kParts); ++part) {
      float key[kPartKeys];
      bool any_key = true;
      if (!last_round) {
        if (K16) {
          const float4 v = stage_keys[stage * kStageSlots + part * kWarpSize + lane];
          const int c = col + part * kCols * kWarpSize;
          if ((pass_bits >> part) & 1) {
#pragma unroll
            for (int i = 0; i < kPartKeys; ++i) key[i] = half_word_value<KBF>(__float_as_uint(component(v, i / 2)), i & 1);
            if (bias != nullptr) {
              float b[kPartKeys];
              if (c + kPartKeys <= span) {
                const float4 b0 = __ldg(reinterpret_cast<const float4*>(bias + c));
                const float4 b1 = __ldg(reinterpret_cast<const float4*>(bias + c + 4));
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                  b[i] = component(b0, i);
                  b[4 + i] = component(b1, i);
                }
              } else {
#pragma unroll
                for (int i = 0; i < kPartKeys; ++i) b[i] = c + i < span ? __ldg(bias + c + i) : 0.f;
              }
#pragma unroll
              for (int i = 0; i < kPartKeys; ++i) key[i] = fmaf(p.in_scale, key[i], b[i]);
            } else {
#pragma unroll
              for (int i = 0; i < kPartKeys; ++i) key[i] = p.in_scale * key[i];
            }
          } else {
#pragma unroll
            for (int i = 0; i < kPartKeys; ++i) key[i] = kSentinelKey;
          }
          any_key = M::any(((pass_bits >> part) & 1) != 0);
        } else {
          float low = kSentinelKey;
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
#pragma unroll
          for (int e = 0; e < kPartKeys; ++e) low = fminf(low, key[e]);  // NaN keys are ignored here
          if (bias != nullptr) any_key = M::any(low <= ws.limit_k);
        }
        if (!group_full(g)) {  // columns past the end: make them never pass
#pragma unroll
          for (int e = 0; e < kPartKeys; ++e)
            if (col + offset(part, e) >= span) key[e] = kSentinelKey;
        }
      }
      if (!any_key) continue;

      unsigned candidates = 0;  // this lane's positions that may beat the limit
      if (!last_round) {
#pragma unroll
        for (int e = 0; e < kPartKeys; ++e)
          candidates |= (key[e] <= ws.limit_k && col + offset(part, e) < span ? 1u : 0u) << e;
      }
      // Each lane offers its own next candidate, so a round inserts one per lane with any left:
      // sparse candidates (the common case once the limit is tight) take a round or two a group,
      // not one per position where some lane has one. (The result does not depend on the order.)
      unsigned mine = candidates;
      bool final_merge = last_round;
      for (;;) {
        const bool pending = M::any(mine != 0);
        if (!pending && !final_merge) break;
        bool full;
        if (pending) {
          const bool has = mine != 0;
          const int e = has ? __ffs(mine) - 1 : 0;
          mine &= mine - 1;
          float k = key[0];
#pragma unroll
          for (int j = 1; j < kPartKeys; ++j) k = (e == j) ? key[j] : k;  // static register indices
          const int c = col + offset(part, e);
          const bool valid = has && c < span;
          V id = kMissing;
          if (valid) id = row_ids != nullptr ? row_ids[c] : V(id_base + c);
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
        if (full) {
          ws.merge_thread_queues();
          if (clamped) clamp_limit<WarpSelect<M, KR, T>, V>(ws, limit_seed);
        }
      }
    }
  }
  wait_copies<0>();
  if (seeded) {
    // Exact when the queue holds k pairs at or below the seed: every key above it ranks after them.
    // Otherwise the row is selected again, unseeded, by a second launch. (One warp a row here.)
    ws.refresh_limit();  // the k-th pair, unclamped
    if (ws.limit_v == kMissing || !(ws.limit_k <= seed)) {
      if (lane == 0) p.redo_rows[atomicAdd(p.redo_count, 1)] = static_cast<int32_t>(row);
      return;
    }
  }

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
// Blocks of kSelectMaxThreads threads a multiprocessor must hold, which caps the registers: 80 up
// to k = 128 and for float keys with int32 ids at 256 (64 spilled 40-96 bytes), else 128 up to 1024
// with int32 ids (where ptxas settled before the pre-filter; uncapped it now takes up to 100 / 180):
// warps that keep copies in flight matter more than a few spilled bytes. The cap that spilled
// 50-220 bytes (int64 ids at 1024, 16-bit keys at 256) is lifted one step.
template <int KR, typename V, bool K16>
constexpr int select_min_blocks() {
  constexpr bool narrow = sizeof(V) == sizeof(int32_t);
  return KR <= 4 || (KR <= 8 && narrow && !K16) ? 3 : KR <= 16 || (KR <= 32 && narrow) ? 2 : 1;
}

template <int KR, int T, typename V, bool K16, bool KBF>
__global__ void __launch_bounds__(kSelectMaxThreads, select_min_blocks<KR, V, K16>()) select_kernel(const SelectParams<V> p) {
  extern __shared__ __align__(16) unsigned char shared[];
  const int warp = threadIdx.x / kWarpSize;
  const int warps_in_block = blockDim.x / kWarpSize;
  const int wpr = p.warps_per_row;
  const int per_block = warps_in_block / wpr;
  float4* stage_keys = reinterpret_cast<float4*>(shared) + size_t(warp) * kStages * kSlotsPerGroup * kWarpSize;
  float4* stage_bias =
      reinterpret_cast<float4*>(shared) + size_t(warps_in_block + warp) * kStages * kSlotsPerGroup * kWarpSize;
  // The loop bound is the same for the whole block, so its barriers (BlockSelect) are reached by all.
  const int64_t tasks = p.task_rows != nullptr ? int64_t(*p.task_count) : p.tasks;
  for (int64_t base = int64_t(blockIdx.x) * per_block; base < tasks; base += int64_t(gridDim.x) * per_block) {
    const int64_t task = base + warp / wpr;
    if (task < tasks) {
      select_task<KR, T, V, K16, KBF>(p, p.task_rows != nullptr ? int64_t(p.task_rows[task]) : task, warp % wpr,
                                      stage_keys, stage_bias, shared);
    }
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
