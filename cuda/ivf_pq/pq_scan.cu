#include "cuda/ivf_pq/pq_scan.h"

#include <cuda_fp16.h>

#include "cuda/core/error.h"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kCentroids = 256;  // per sub-quantizer
// Largest entry of a float16 table after scaling: below half's 65 504 with room for rounding.
constexpr float kHalfTableTop = 60000.f;

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

template <typename Lut>
__device__ __forceinline__ float code_sum(const Lut* lut, const uint8_t* code, int m) {
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

// Block-wide sum, the same in every thread, in a fixed order (results repeat bit for bit).
__device__ __forceinline__ float block_sum(float v, float* scratch) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
  __syncthreads();  // scratch may still be read by an earlier call
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < kWarps; ++w) total += scratch[w];
  return total;
}

// What every scan block starts with: its part of the row (the row's length is the sum of its probed
// lists' sizes) and the query's squared norm (L2: term 2 = coarse key + norm).
struct RowStart {
  int64_t row, begin, end;
  float query_term;
};

__device__ __forceinline__ RowStart row_start(const PqScanParams& p, float* scratch) {
  RowStart r;
  r.row = p.chunks == 1 ? blockIdx.x : blockIdx.x / p.chunks;
  r.begin = p.chunks == 1 ? 0 : (blockIdx.x % p.chunks) * p.chunk_len;
  const int32_t* lists = p.lists + r.row * p.nprobe;
  int32_t count = 0;
  for (int64_t probe = threadIdx.x; probe < p.nprobe; probe += kThreads) count += p.list_size[lists[probe]];
  __shared__ int32_t total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  atomicAdd(&total, count);  // integer addition: order does not matter
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

// Follows one thread's position through the row's segments (one per probed list).
struct Cursor {
  int64_t probe = -1, seg_start = 0, seg_end = 0, base = 0;
  float term = 0.f;
  __device__ __forceinline__ void seek(const PqScanParams& p, const int32_t* lists, int64_t row, float query_term,
                                       int64_t pos) {
    while (pos >= seg_end) {
      ++probe;
      seg_start = seg_end;
      const int32_t list = lists[probe];
      seg_end += p.list_size[list];
      base = p.list_offset[list];
      term = p.coarse_keys[row * p.nprobe + probe] + query_term;
    }
  }
  __device__ __forceinline__ int64_t slot(int64_t pos) const { return base + (pos - seg_start); }
};

// The 16-bit tables' first pass: each sub-quantizer's minimum into mins[s], their sum into *offset,
// and the widest range over the sub-quantizers (returned). Every thread of the block calls this.
__device__ __forceinline__ float table_range(const float* table, int m, float* mins, float* scratch, float* offset) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  float widest = 0.f;
  for (int s = warp; s < m; s += kWarps) {
    float lo = __int_as_float(0x7f800000), hi = -__int_as_float(0x7f800000);
    for (int c = lane; c < kCentroids; c += 32) {
      const float v = __ldg(table + s * kCentroids + c);
      lo = fminf(lo, v);
      hi = fmaxf(hi, v);
    }
#pragma unroll
    for (int d = 16; d > 0; d /= 2) {
      lo = fminf(lo, __shfl_xor_sync(0xffffffffu, lo, d));
      hi = fmaxf(hi, __shfl_xor_sync(0xffffffffu, hi, d));
    }
    if (lane == 0) mins[s] = lo;
    widest = fmaxf(widest, hi - lo);
  }
  __syncthreads();
  if (lane == 0) scratch[warp] = widest;
  __syncthreads();
  float range = 0.f;
  for (int w = 0; w < kWarps; ++w) range = fmaxf(range, scratch[w]);
  for (int s = 0; s < m; ++s) *offset += mins[s];
  return range;
}

// One entry per thread: its code's M bytes in 16- or 4-byte loads, M look-ups in the shared table.
template <typename Lut>
__global__ void __launch_bounds__(kThreads) pq_scan_kernel(const PqScanParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ float scratch[kWarps];
  const RowStart r = row_start(p, scratch);
  if (r.begin >= r.end) return;  // the whole block

  const int m = static_cast<int>(p.m);
  const int entries = m * kCentroids;
  Lut* lut = reinterpret_cast<Lut*>(shared);
  const float* table = p.tables + r.row * entries;

  float scale_back = 1.f, offset = 0.f;
  if constexpr (sizeof(Lut) == 4) {
    const float4* t4 = reinterpret_cast<const float4*>(table);  // entries is a multiple of 256
    float4* out = reinterpret_cast<float4*>(lut);
    for (int i = threadIdx.x; i < entries / 4; i += kThreads) out[i] = __ldg(t4 + i);
  } else {
    // Pass 1: each sub-quantizer's minimum and the widest range; pass 2: the scaled entries.
    float* mins = reinterpret_cast<float*>(shared + (size_t(entries) * 2 + 15) / 16 * 16);
    const float range = table_range(table, m, mins, scratch, &offset);
    const float scale = range > 0.f && range < __int_as_float(0x7f800000) ? kHalfTableTop / range : 1.f;
    scale_back = 1.f / scale;
    for (int i = threadIdx.x; i < entries; i += kThreads)
      lut[i] = __float2half_rn((__ldg(table + i) - mins[i / kCentroids]) * scale);
  }
  __syncthreads();

  const int32_t* lists = p.lists + r.row * p.nprobe;
  float* out = p.dist + r.row * p.row_stride;
  Cursor cur;
  for (int64_t pos = r.begin + threadIdx.x; pos < r.end; pos += kThreads) {
    cur.seek(p, lists, r.row, r.query_term + offset, pos);
    const int64_t slot = cur.slot(pos);
    const float sum = code_sum(lut, p.codes + slot * p.code_stride, m);
    out[pos] = cur.term + (p.entry_terms != nullptr ? __ldg(p.entry_terms + slot) : 0.f) + sum * scale_back;
  }
}

// ---- rotated, bank-conflict-free scan (M = 32 or 64) ----
// A warp's 32 lanes look up 32 random codes: in the plain layout they hit ~3.5 words per bank.
// Here lane l takes its sub-quantizers in the order l, l + 1, .. (mod 32), so at each step the 32
// lanes read 32 different sub-quantizers; the table stores, for each code value c, a row of 64
// words (256 bytes) whose word p holds sub-quantizer p % 32 (rows written twice over), so lane l at
// step s reads word c * 64 + l + s: bank (l + s) % 32, a different bank per lane, and the address is
// (c << 8) + a per-lane base + an immediate. Each lane rotates its code's bytes by l once per entry.
// Entries are float for M = 32 (whatever the mode: as fast as 16-bit ones there, and exact), and
// 16-bit fixed point for M = 64 with fp16/bf16 (sub-quantizer m's table less its minimum, scaled so
// the widest table spans 0 .. 65535, summed exactly as integers: 16 bits of the range per look-up
// where float16 kept 11), the second group of 32 sub-quantizers in the high half of each word.
// (M = 64 float tables would take 128 KB a block.)
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

// Table writes walk 32 x 32 tiles (sub-quantizers x centroids) along diagonals: element i of a tile
// goes to lane i % 32, centroid c0 + lane, sub-quantizer s0 + (lane + i / 32) % 32, so a warp's
// stores hit 32 banks (a warp along centroids would hit one: rows are 256 bytes) and its loads
// reuse each 32-byte sector of the float table within a few steps.
template <int Groups>
__device__ __forceinline__ int diagonal_sub(int i) {
  const int tile = i >> 10, lane = i & 31, step = (i >> 5) & 31;
  return kRotGroup * (tile % Groups) + ((lane + step) & 31);
}
template <int Groups>
__device__ __forceinline__ int diagonal_centroid(int i) {
  return kRotGroup * ((i >> 10) / Groups) + (i & 31);
}

template <typename Entry, typename Sum>
__device__ __forceinline__ void rotated_group_sum(const unsigned char* lane_base, const uint8_t* code, int l,
                                                  Sum& sum) {
  uint32_t r[8];
  load_rotated(code, l, r);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const uint32_t row = __byte_perm(r[i], 0u, 0x4404u | (unsigned(b) << 4));  // code byte << 8
      sum += Sum(*reinterpret_cast<const Entry*>(lane_base + row + 4 * (4 * i + b)));
    }
  }
}

// Entry float: M = 32 (Groups = 1). Entry uint16_t: M = 64 (Groups = 2).
template <typename Entry, int Groups>
__global__ void __launch_bounds__(kThreads) pq_scan_rotated_kernel(const PqScanParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  __shared__ float scratch[kWarps];
  const RowStart r = row_start(p, scratch);
  if (r.begin >= r.end) return;  // the whole block

  constexpr int m = Groups * kRotGroup;
  constexpr int entries = m * kCentroids;
  const float* table = p.tables + r.row * entries;
  float scale_back = 1.f, offset = 0.f;
  if constexpr (sizeof(Entry) == 4) {
    for (int i = threadIdx.x; i < entries; i += kThreads) {
      const int s = diagonal_sub<Groups>(i), c = diagonal_centroid<Groups>(i);
      const float v = __ldg(table + s * kCentroids + c);
      float* row = reinterpret_cast<float*>(shared + c * kRotRowBytes);
      row[s] = v;
      row[s + kRotGroup] = v;
    }
  } else {
    float* mins = reinterpret_cast<float*>(shared + kRotTableBytes);
    const float range = table_range(table, m, mins, scratch, &offset);
    const float scale = range > 0.f && range < __int_as_float(0x7f800000) ? 65535.f / range : 1.f;
    scale_back = 1.f / scale;
    for (int i = threadIdx.x; i < entries; i += kThreads) {
      const int s = diagonal_sub<Groups>(i), c = diagonal_centroid<Groups>(i);
      const float q = fminf(fmaxf((__ldg(table + s * kCentroids + c) - mins[s]) * scale, 0.f), 65535.f);
      const uint16_t v = static_cast<uint16_t>(__float2uint_rn(q));
      uint16_t* row = reinterpret_cast<uint16_t*>(shared + c * kRotRowBytes);
      const int at = 2 * (s % kRotGroup) + s / kRotGroup;  // halfword index: word s % 32, half s / 32
      row[at] = v;
      row[at + 2 * kRotGroup] = v;
    }
  }
  __syncthreads();

  const int l = threadIdx.x & 31;
  const unsigned char* lane_base = shared + 4 * l;
  const int32_t* lists = p.lists + r.row * p.nprobe;
  float* out = p.dist + r.row * p.row_stride;
  Cursor cur;
  for (int64_t pos = r.begin + threadIdx.x; pos < r.end; pos += kThreads) {
    cur.seek(p, lists, r.row, r.query_term + offset, pos);
    const int64_t slot = cur.slot(pos);
    const uint8_t* code = p.codes + slot * p.code_stride;
    float sum;
    if constexpr (sizeof(Entry) == 4) {
      sum = 0.f;
      rotated_group_sum<float>(lane_base, code, l, sum);
    } else {
      uint32_t total = 0;
#pragma unroll
      for (int g = 0; g < Groups; ++g) rotated_group_sum<uint16_t>(lane_base + 2 * g, code + kRotGroup * g, l, total);
      sum = float(total);  // below 2^24: exact
    }
    out[pos] = cur.term + (p.entry_terms != nullptr ? __ldg(p.entry_terms + slot) : 0.f) + sum * scale_back;
  }
}

// The rotated kernel serves M = 32 (float tables) and M = 64 with fp16/bf16 (fixed point), codes in
// whole 16-byte words.
bool use_rotated(int64_t m, int64_t code_stride, bool half_tables) {
  return code_stride == m && (m == 32 || (m == 64 && half_tables));
}

template <typename Kernel>
void launch(Kernel kernel, const PqScanParams& p, size_t shared, cudaStream_t stream) {
  if (shared > 48 * 1024)
    QV_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  kernel<<<static_cast<unsigned>(p.rows * p.chunks), kThreads, shared, stream>>>(p);
  QV_LAUNCH_CHECK("pq_scan_kernel");
}

}  // namespace

int64_t pq_scan_shared_bytes(int64_t m, int64_t code_stride, bool half_tables) {
  if (use_rotated(m, code_stride, half_tables)) return kRotTableBytes + (m == 64 ? m * 4 : 0);
  const int64_t lut = (m * kCentroids * (half_tables ? 2 : 4) + 15) / 16 * 16;
  return lut + (half_tables ? m * 4 : 0);
}

void launch_pq_scan(const PqScanParams& p, bool half_tables, cudaStream_t stream) {
  if (p.rows * p.chunks == 0) return;
  const size_t shared = static_cast<size_t>(pq_scan_shared_bytes(p.m, p.code_stride, half_tables));
  if (use_rotated(p.m, p.code_stride, half_tables)) {
    if (p.m == 32) {
      launch(pq_scan_rotated_kernel<float, 1>, p, shared, stream);
    } else {
      launch(pq_scan_rotated_kernel<uint16_t, 2>, p, shared, stream);
    }
  } else if (half_tables) {
    launch(pq_scan_kernel<__half>, p, shared, stream);
  } else {
    launch(pq_scan_kernel<float>, p, shared, stream);
  }
}

}  // namespace quiver::gpu
