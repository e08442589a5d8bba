// The kernels of pq_scan.h: table layouts (how a block builds its look-up table and sums an entry's
// look-ups) and sinks (where the estimates go: a row of distances, or WarpSelect queues). One kernel
// template, instantiated per (layout, sink) by pq_scan.cu and pq_scan_select_k*.cu.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda/core/error.h"
#include "cuda/ivf/row_select_output.cuh"
#include "cuda/ivf_pq/pq_scan.h"
#include "cuda/select/block_merge.cuh"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu::pq_detail {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kCentroids = 256;  // per sub-quantizer
// Largest entry of a float16 table after scaling: below half's 65 504 with room for rounding.
constexpr float kHalfTableTop = 60000.f;
constexpr float kFixedTableTop = 65535.f;
// Widens the codebook bounds against the float rounding of the bound and of the entries.
constexpr float kBoundSlack = 1.f + 1.f / 1024.f;
// Bytes the selecting sink's queue merge takes (it reuses the table's memory).
constexpr int64_t kMergeBytes = kMaxPqScanSelectK * kWarps * (sizeof(float) + sizeof(int32_t));

__host__ __device__ constexpr int64_t align16(int64_t bytes) { return (bytes + 15) / 16 * 16; }

// ---- what every block starts with ----

// Block-wide reduction by `op` (a sum or a max), the same in every thread, in a fixed order (results
// repeat bit for bit). `identity`: op's neutral value.
template <typename Op>
__device__ __forceinline__ float block_reduce(float v, float* scratch, float identity, Op op) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v = op(v, __shfl_xor_sync(kFullWarp, v, d));
  __syncthreads();  // scratch may still be read by an earlier call
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float total = identity;
  for (int w = 0; w < kWarps; ++w) total = op(total, scratch[w]);
  return total;
}
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  return block_reduce(v, scratch, 0.f, [](float a, float b) { return a + b; });
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
  return block_reduce(v, scratch, 0.f, [](float a, float b) { return fmaxf(a, b); });
}

// The block's part of its row (the row's length is the sum of its probed lists' sizes), the query's
// squared norm (L2: term 2 = coarse key + norm) and, for up to kSharedProbes probes, each segment's
// end, first slot and coarse key in shared memory (a lane entering a segment then reads them there,
// not through three dependent global loads).
constexpr int kSharedProbes = 64;
struct Segments {
  int32_t end[kSharedProbes];   // row position where probe p's segment ends
  int32_t base[kSharedProbes];  // its list's first slot
  float key[kSharedProbes];     // its coarse key
};

struct RowStart {
  int64_t row, begin, end;  // (the task, row * chunks + chunk, is the block's index)
  float query_term;
  const Segments* segments;  // null: more than kSharedProbes probes
};

__device__ __forceinline__ RowStart row_start(const PqScanParams& p, Segments& segments, float* scratch) {
  RowStart r;
  const int64_t chunk = p.chunks == 1 ? 0 : blockIdx.x % p.chunks;
  r.row = p.chunks == 1 ? blockIdx.x : blockIdx.x / p.chunks;
  r.begin = chunk * p.chunk_len;
  const int32_t* lists = p.lists + r.row * p.nprobe;
  __shared__ int32_t total;
  if (p.nprobe <= kSharedProbes) {
    if (threadIdx.x < p.nprobe) {
      const int32_t list = lists[threadIdx.x];
      segments.end[threadIdx.x] = p.list_size[list];
      segments.base[threadIdx.x] = p.list_offset[list];
      segments.key[threadIdx.x] = p.coarse_keys[r.row * p.nprobe + threadIdx.x];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int32_t running = 0;
      for (int probe = 0; probe < p.nprobe; ++probe) segments.end[probe] = running += segments.end[probe];
      total = running;
    }
    r.segments = &segments;
  } else {
    int32_t count = 0;
    for (int64_t probe = threadIdx.x; probe < p.nprobe; probe += kThreads) count += p.list_size[lists[probe]];
    if (threadIdx.x == 0) total = 0;
    __syncthreads();
    atomicAdd(&total, count);  // integer addition: order does not matter
    r.segments = nullptr;
  }
  __syncthreads();
  r.end = min(int64_t(total), r.begin + p.chunk_len);
  float norm = 0.f;
  if (p.l2) {
    const float* x = p.queries + r.row * p.dim;
    for (int64_t i = threadIdx.x; i < p.dim; i += kThreads) norm = fmaf(x[i], x[i], norm);
    norm = block_sum(norm, scratch);
  }
  r.query_term = norm;
  return r;
}

// Follows one lane's position through the row's segments (one per probed list).
struct Cursor {
  int64_t probe = -1, seg_start = 0, seg_end = 0, base = 0;
  float term = 0.f;
  __device__ __forceinline__ void seek(const PqScanParams& p, const RowStart& r, float query_term, int64_t pos) {
    while (pos >= seg_end) {
      ++probe;
      seg_start = seg_end;
      if (r.segments != nullptr) {
        seg_end = r.segments->end[probe];
        base = r.segments->base[probe];
        term = r.segments->key[probe] + query_term;
      } else {
        const int32_t list = p.lists[r.row * p.nprobe + probe];
        seg_end += p.list_size[list];
        base = p.list_offset[list];
        term = p.coarse_keys[r.row * p.nprobe + probe] + query_term;
      }
    }
  }
  __device__ __forceinline__ int64_t slot(int64_t pos) const { return base + (pos - seg_start); }
};

// ---- the query's table ----

// Where a block keeps the query (dim floats) and the 16-bit tables' per-sub-quantizer offsets, after
// the table region.
struct TableShared {
  unsigned char* lut;
  float* x;
  float* lo;
};

// The table's region: the table, or the selecting sink's queue merge, whichever is larger.
__host__ __device__ constexpr int64_t table_region_bytes(int64_t lut_bytes) {
  return align16(lut_bytes > kMergeBytes ? lut_bytes : kMergeBytes);
}

__device__ __forceinline__ TableShared table_shared(unsigned char* shared, int64_t lut_bytes, int64_t dim) {
  TableShared t;
  t.lut = shared;
  t.x = reinterpret_cast<float*>(shared + table_region_bytes(lut_bytes));
  t.lo = t.x + dim;
  return t;
}

// alpha <x_s, q2_sc>: one term-3 entry, from the query in shared memory and the codebooks (L2).
// Dsub > 0: the sub-space width known at compile time (unrolled, so a caller's loads can all be in
// flight at once); 0: p.dsub.
template <int Dsub = 0>
__device__ __forceinline__ float term3_value(const PqScanParams& p, const float* x, float alpha, int s, int c) {
  const int dsub = Dsub > 0 ? Dsub : static_cast<int>(p.dsub);
  const float* q = p.codebooks + (int64_t(s) * kCentroids + c) * dsub;
  const float* xs = x + s * dsub;
  float v = 0.f;
  if (dsub % 4 == 0) {  // 16-byte aligned codewords
#pragma unroll
    for (int j = 0; j < dsub; j += 4) {
      const float4 w = __ldg(reinterpret_cast<const float4*>(q + j));
      v = fmaf(xs[j], w.x, v);
      v = fmaf(xs[j + 1], w.y, v);
      v = fmaf(xs[j + 2], w.z, v);
      v = fmaf(xs[j + 3], w.w, v);
    }
  } else if (dsub % 2 == 0) {
#pragma unroll
    for (int j = 0; j < dsub; j += 2) {
      const float2 w = __ldg(reinterpret_cast<const float2*>(q + j));
      v = fmaf(xs[j], w.x, v);
      v = fmaf(xs[j + 1], w.y, v);
    }
  } else {
#pragma unroll
    for (int j = 0; j < dsub; ++j) v = fmaf(xs[j], __ldg(q + j), v);
  }
  return alpha * v;
}

// The query into shared memory; for 16-bit tables also each sub-quantizer's lower bound (lo[s]),
// their sum (the offset added back to every estimate) and the scale that maps the widest bounded
// range onto `top`. Every thread of the block calls this.
struct TableFrame {
  float scale = 1.f, scale_back = 1.f, offset = 0.f;
};

__device__ __forceinline__ TableFrame load_query(const PqScanParams& p, int64_t row, const TableShared& t,
                                                 float alpha, bool bounded, float top, float* scratch) {
  const float* x = p.queries + row * p.dim;
  for (int64_t i = threadIdx.x; i < p.dim; i += kThreads) t.x[i] = x[i];
  __syncthreads();
  TableFrame f;
  if (!bounded) return f;
  const int m = static_cast<int>(p.m), dsub = static_cast<int>(p.dsub);
  const float* centres = p.bounds;
  const float* radii = p.bounds + m * dsub;
  float widest = 0.f;
  for (int s = threadIdx.x; s < m; s += kThreads) {
    float dot = 0.f, norm = 0.f;
    for (int j = 0; j < dsub; ++j) {
      const float xj = t.x[s * dsub + j];
      dot = fmaf(xj, __ldg(centres + s * dsub + j), dot);
      norm = fmaf(xj, xj, norm);
    }
    const float half_width = fabsf(alpha) * sqrtf(norm) * __ldg(radii + s) * kBoundSlack;
    t.lo[s] = alpha * dot - half_width;
    widest = fmaxf(widest, 2.f * half_width);
  }
  widest = block_max(widest, scratch);  // its barriers also publish lo[]
  f.scale = widest > 0.f && widest < __int_as_float(0x7f800000) ? top / widest : 1.f;
  f.scale_back = 1.f / f.scale;
  for (int s = 0; s < m; ++s) f.offset += t.lo[s];
  return f;
}

__device__ __forceinline__ float lookup(const float* lut, int index) { return lut[index]; }
__device__ __forceinline__ float lookup(const __half* lut, int index) { return __half2float(lut[index]); }

// Sum of the table entries of 4 codes packed in a word, sub-quantizers m0 .. m0 + 3 (up to `valid`).
template <typename Lut>
__device__ __forceinline__ float word_sum(const Lut* lut, uint32_t word, int m0, int valid = 4) {
  float s = 0.f;
#pragma unroll
  for (int b = 0; b < 4; ++b)
    if (b < valid) s += lookup(lut, (m0 + b) * kCentroids + int((word >> (8 * b)) & 0xffu));
  return s;
}

// The plain layout, any M: entry (s, c) at s * 256 + c, float or float16 (offset and scaled).
template <typename Lut>
struct PlainTable {
  static constexpr bool kBounded = sizeof(Lut) == 2;

  static __host__ __device__ int64_t bytes(int64_t m) { return align16(m * kCentroids * int64_t(sizeof(Lut))); }

  static __device__ __forceinline__ TableFrame build(const PqScanParams& p, const RowStart& r, const TableShared& t,
                                                     float alpha, float* scratch) {
    const TableFrame f = load_query(p, r.row, t, alpha, kBounded, kHalfTableTop, scratch);
    Lut* lut = reinterpret_cast<Lut*>(t.lut);
    const int entries = static_cast<int>(p.m) * kCentroids;
    for (int i = threadIdx.x; i < entries; i += kThreads) {
      const int s = i / kCentroids, c = i % kCentroids;
      const float v = term3_value(p, t.x, alpha, s, c);
      if constexpr (kBounded) {
        lut[i] = __float2half_rn(fminf(fmaxf((v - t.lo[s]) * f.scale, 0.f), kHalfTableTop));
      } else {
        lut[i] = v;
      }
    }
    __syncthreads();
    return f;
  }

  // One entry's sum: its code's M bytes in 16- or 4-byte loads, M look-ups.
  static __device__ __forceinline__ float sum(const unsigned char* table, const uint8_t* code, int m) {
    const Lut* lut = reinterpret_cast<const Lut*>(table);
    float sum = 0.f;
    if (m % 16 == 0) {  // then code_stride = m: whole, aligned uint4 words
      const uint4* c4 = reinterpret_cast<const uint4*>(code);
      for (int w = 0; w < m / 16; ++w) {
        const uint4 v = __ldg(c4 + w);
        sum += word_sum(lut, v.x, 16 * w) + word_sum(lut, v.y, 16 * w + 4) + word_sum(lut, v.z, 16 * w + 8) +
               word_sum(lut, v.w, 16 * w + 12);
      }
    } else {
      const uint32_t* c1 = reinterpret_cast<const uint32_t*>(code);
      const int words = m / 4;
      for (int w = 0; w < words; ++w) sum += word_sum(lut, __ldg(c1 + w), 4 * w);
      if (m % 4 != 0) sum += word_sum(lut, __ldg(c1 + words), 4 * words, m % 4);
    }
    return sum;
  }
};

// ---- rotated, bank-conflict-free layout (M = 32 or 64) ----
// A warp's 32 lanes look up 32 random codes: in the plain layout they hit ~3.5 words per bank.
// Here lane l takes its sub-quantizers in the order l, l + 1, .. (mod 32), so at each step the 32
// lanes read 32 different sub-quantizers; the table stores, for each code value c, a row of 64
// words (256 bytes) whose word p holds sub-quantizer p % 32 (rows written twice over), so lane l at
// step s reads word c * 64 + l + s: bank (l + s) % 32, a different bank per lane, and the address is
// (c << 8) + a per-lane base + an immediate. Each lane rotates its code's bytes by l once per entry.
// Entries are float for M = 32 (whatever the mode: as fast as 16-bit ones there, and exact), and
// 16-bit fixed point for M = 64 with fp16/bf16 (0 .. 65535, summed exactly as integers: 16 bits of
// the bounded range per look-up where float16 kept 11), the second group of 32 sub-quantizers in
// the high half of each word. (M = 64 float tables would take 128 KB a block.)
constexpr int kRotGroup = 32;
constexpr int kRotRowBytes = 256;
constexpr int64_t kRotTableBytes = int64_t(kCentroids) * kRotRowBytes;

// Bytes (l + s) % 32, s = 0 .. 31, of the 32-byte code group at `code`, as 8 little-endian words.
__device__ __forceinline__ void load_rotated(const uint8_t* code, int l, uint32_t r[8]) {
  const uint4* c4 = reinterpret_cast<const uint4*>(code);
  const int first = (l >> 4) & 1;
  const uint4 a = __ldg(c4 + first), b = __ldg(c4 + (first ^ 1));
  uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};  // rotated by 4 * (l >> 4) words
  uint32_t t[8];
  const bool one = (l & 4) != 0, two = (l & 8) != 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) t[i] = one ? w[(i + 1) & 7] : w[i];
#pragma unroll
  for (int i = 0; i < 8; ++i) w[i] = two ? t[(i + 2) & 7] : t[i];
  const unsigned shift = 8u * unsigned(l & 3);
#pragma unroll
  for (int i = 0; i < 8; ++i) r[i] = __funnelshift_r(w[i], w[(i + 1) & 7], shift);
}

// v[i] <- v[(i + l) % 32]: five conditional rotations with static register indices (an index that
// depends on the lane would move the array to local memory).
__device__ __forceinline__ void rotate_by_lane(float (&v)[kRotGroup], int l) {
#pragma unroll
  for (int b = 0; b < 5; ++b) {
    const bool on = ((l >> b) & 1) != 0;
    float t[kRotGroup];
#pragma unroll
    for (int i = 0; i < kRotGroup; ++i) t[i] = v[(i + (1 << b)) % kRotGroup];
#pragma unroll
    for (int i = 0; i < kRotGroup; ++i) v[i] = on ? t[i] : v[i];
  }
}

// Sums the group's 32 look-ups. A look-up's offset in the table, (code byte << 8) + lane_offset, is
// one byte permute (lane_offset = 4 l + 2 g < 256 fills the low byte), so each look-up costs a
// permute, a load and an add.
template <typename Entry, typename Sum>
__device__ __forceinline__ void rotated_group_sum(const unsigned char* table, uint32_t lane_offset, const uint8_t* code,
                                                  int l, Sum& sum) {
  uint32_t r[8];
  load_rotated(code, l, r);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const uint32_t at = __byte_perm(r[i], lane_offset, 0x5504u | (unsigned(b) << 4));
      sum += Sum(*reinterpret_cast<const Entry*>(table + at + 4 * (4 * i + b)));
    }
  }
}

// Entry float: M = 32 (Groups = 1). Entry uint16_t: M = 64 (Groups = 2).
template <typename Entry, int Groups>
struct RotatedTable {
  static constexpr bool kBounded = sizeof(Entry) == 2;
  static constexpr int kM = Groups * kRotGroup;

  static __host__ __device__ int64_t bytes(int64_t) { return kRotTableBytes; }

  static __device__ __forceinline__ TableFrame build(const PqScanParams& p, const RowStart& r, const TableShared& t,
                                                     float alpha, float* scratch) {
    const TableFrame f = load_query(p, r.row, t, alpha, kBounded, kFixedTableTop, scratch);
    switch (p.dsub) {  // d = 128: M = 64 has dsub 2, M = 32 dsub 4
      case 2: build_tiles<2>(p, t, f, alpha); break;
      case 4: build_tiles<4>(p, t, f, alpha); break;
      default: build_tiles<0>(p, t, f, alpha); break;
    }
    __syncthreads();
    return f;
  }

  // A warp builds 32 x 32 tiles (32 sub-quantizers of a group x 32 centroids). Lane l computes the
  // entries of centroid c0 + l (each load: 32 consecutive codewords, and all 32 in flight), rotates
  // them by l, and at step j writes sub-quantizer (l + j) % 32, word (l + j) % 32 of its row: 32
  // banks a store.
  template <int Dsub>
  static __device__ __forceinline__ void build_tiles(const PqScanParams& p, const TableShared& t, const TableFrame& f,
                                                     float alpha) {
    const int lane = threadIdx.x & 31;
    constexpr int tiles = Groups * (kCentroids / kRotGroup);
    for (int tile = threadIdx.x / 32; tile < tiles; tile += kWarps) {
      const int g = tile % Groups, c = (tile / Groups) * kRotGroup + lane;
      float v[kRotGroup];
#pragma unroll
      for (int j = 0; j < kRotGroup; ++j) v[j] = term3_value<Dsub>(p, t.x, alpha, g * kRotGroup + j, c);
      rotate_by_lane(v, lane);
#pragma unroll
      for (int j = 0; j < kRotGroup; ++j) {
        const int w = (lane + j) & (kRotGroup - 1), s = g * kRotGroup + w;
        if constexpr (kBounded) {
          const float q = fminf(fmaxf((v[j] - t.lo[s]) * f.scale, 0.f), kFixedTableTop);
          const uint16_t e = static_cast<uint16_t>(__float2uint_rn(q));
          uint16_t* out = reinterpret_cast<uint16_t*>(t.lut + c * kRotRowBytes);
          out[2 * w + g] = e;  // word w, half g
          out[2 * w + g + 2 * kRotGroup] = e;
        } else {
          float* out = reinterpret_cast<float*>(t.lut + c * kRotRowBytes);
          out[w] = v[j];
          out[w + kRotGroup] = v[j];
        }
      }
    }
  }

  static __device__ __forceinline__ float sum(const unsigned char* table, const uint8_t* code, int) {
    const int l = threadIdx.x & 31;
    if constexpr (sizeof(Entry) == 4) {
      float sum = 0.f;
      rotated_group_sum<float>(table, 4u * l, code, l, sum);
      return sum;
    } else {
      uint32_t total = 0;
#pragma unroll
      for (int g = 0; g < Groups; ++g) rotated_group_sum<uint16_t>(table, 4u * l + 2u * g, code + kRotGroup * g, l, total);
      return float(total);  // below 2^24: exact
    }
  }
};

// ---- sinks ----

// Writes every estimate into the query's row of distances.
struct RowSink {
  __device__ explicit RowSink(const PqScanParams&) {}
  __device__ __forceinline__ void take(const PqScanParams& p, int64_t row, int64_t pos, float key, int32_t slot) {
    if (slot != SentinelValue<int32_t>::value) p.dist[row * p.row_stride + pos] = key;
  }
  __device__ __forceinline__ void finish(const PqScanParams&, const RowStart&, unsigned char*) {}
};

// Keeps the k best estimates in a WarpSelect queue per warp (detail::offer: filter and NaN as in
// row_select), merges the block's queues and writes them.
template <int KR, int T>
struct SelectSink {
  using M = WarpLanes<int32_t, (KR >= 16)>;
  WarpSelect<M, KR, T> ws;

  __device__ explicit SelectSink(const PqScanParams& p) { ws.reset(static_cast<int>(p.k)); }

  __device__ __forceinline__ void take(const PqScanParams& p, int64_t, int64_t, float key, int32_t slot) {
    detail::offer(ws, p.slot_filter, key, slot);
  }

  __device__ __forceinline__ void finish(const PqScanParams& p, const RowStart& r, unsigned char* shared) {
    ws.finish();
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    __syncthreads();  // every warp is done with the table, whose memory the merge reuses
    float* sk = reinterpret_cast<float*>(shared);
    int32_t* sv = reinterpret_cast<int32_t*>(shared + sizeof(float) * KR * kWarpSize * kWarps);
    detail::merge_block_queues(ws, sk, sv, warp, warp, kWarps, lane);
    if (warp != 0) return;
    if (p.final.distances != nullptr) {
      detail::write_final(ws.wk, ws.wv, p.final, r.row, p.k, lane);
    } else {
      detail::write_candidates(ws.wk, ws.wv, p.out_keys, p.out_slots, blockIdx.x, p.k, lane);
    }
  }
};

// One block per (row, chunk): build the table, estimate each entry of the chunk (a warp takes 32
// consecutive positions at a time, so a selecting warp's lanes insert together), hand them to the sink.
template <class Table, class Sink>
__global__ void __launch_bounds__(kThreads, 3) pq_scan_kernel(const PqScanParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ float scratch[kWarps];
  __shared__ Segments segments;
  const RowStart r = row_start(p, segments, scratch);
  Sink sink(p);
  if (r.begin < r.end) {  // the same in the whole block
    const float alpha = p.l2 ? -2.f : -1.f;
    const TableShared t = table_shared(shared, Table::bytes(p.m), p.dim);
    const TableFrame f = Table::build(p, r, t, alpha, scratch);
    const int m = static_cast<int>(p.m);
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    const float query_term = r.query_term + f.offset;
    Cursor cur;
    // Two entries a lane per step: their code loads and look-ups overlap.
    constexpr int kUnroll = 2;
    for (int64_t first = r.begin + warp * 32; first < r.end; first += kUnroll * kThreads) {
      float key[kUnroll];
      int32_t slot[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t pos = first + u * kThreads + lane;
        key[u] = kSentinelKey;
        slot[u] = SentinelValue<int32_t>::value;
        if (pos < r.end) {
          cur.seek(p, r, query_term, pos);
          const int64_t s = cur.slot(pos);
          const float sum = Table::sum(t.lut, p.codes + s * p.code_stride, m);
          key[u] = cur.term + (p.entry_terms != nullptr ? __ldg(p.entry_terms + s) : 0.f) + sum * f.scale_back;
          slot[u] = static_cast<int32_t>(s);
        }
      }
      // One call site for the sink (a selecting sink inlines its merge networks there), picking
      // the pair with static register indices.
#pragma unroll 1
      for (int u = 0; u < kUnroll; ++u) {
        const float k = u == 0 ? key[0] : key[1];
        const int32_t v = u == 0 ? slot[0] : slot[1];
        sink.take(p, r.row, first + u * kThreads + lane, k, v);
      }
    }
  }
  sink.finish(p, r, shared);
}

// The rotated layout serves M = 32 (float tables) and M = 64 with fp16/bf16 (fixed point), codes in
// whole 16-byte words.
inline bool use_rotated(int64_t m, int64_t code_stride, bool half_tables) {
  return code_stride == m && (m == 32 || (m == 64 && half_tables));
}

template <typename Kernel>
void launch(Kernel kernel, const PqScanParams& p, cudaStream_t stream) {
  const size_t shared = static_cast<size_t>(pq_scan_shared_bytes(p.m, p.dsub, p.code_stride, p.half_tables));
  if (shared > 48 * 1024)
    QV_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  kernel<<<static_cast<unsigned>(p.rows * p.chunks), kThreads, shared, stream>>>(p);
  QV_LAUNCH_CHECK("pq_scan_kernel");
}

// Launches the kernel of the table layout p asks for, with sink Sink.
template <class Sink>
void launch_for_layout(const PqScanParams& p, cudaStream_t stream) {
  if (p.rows * p.chunks == 0) return;
  if (use_rotated(p.m, p.code_stride, p.half_tables)) {
    if (p.m == 32) {
      launch(pq_scan_kernel<RotatedTable<float, 1>, Sink>, p, stream);
    } else {
      launch(pq_scan_kernel<RotatedTable<uint16_t, 2>, Sink>, p, stream);
    }
  } else if (p.half_tables) {
    launch(pq_scan_kernel<PlainTable<__half>, Sink>, p, stream);
  } else {
    launch(pq_scan_kernel<PlainTable<float>, Sink>, p, stream);
  }
}

}  // namespace quiver::gpu::pq_detail

namespace quiver::gpu::pq_detail {

// The selecting scan per queue size (pq_scan_select_k*.cu, one bucket of select_buckets.h each).
void launch_select_bucket0(const PqScanParams& p, cudaStream_t stream);
void launch_select_bucket1(const PqScanParams& p, cudaStream_t stream);
void launch_select_bucket2(const PqScanParams& p, cudaStream_t stream);

}  // namespace quiver::gpu::pq_detail
