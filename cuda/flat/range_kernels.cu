// range_kernels.h's kernels: thresholds, the fused filter + exact check of a distance tile, and the
// scatter / decode around the per-query sort.
#include "cuda/flat/range_kernels.h"

#include <algorithm>
#include <cmath>

#include "cuda/core/error.h"
#include "cuda/flat/certify.cuh"
#include "cuda/flat/exact_key.cuh"
#include "cuda/select/warp_lanes.cuh"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
// Grid-stride loops: enough blocks to fill any current GPU, few enough to launch cheaply.
constexpr int64_t kMaxBlocks = 65535;

unsigned blocks_for(int64_t items) {
  return static_cast<unsigned>(std::clamp<int64_t>((items + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// ---- thresholds -----------------------------------------------------------------------------------

// The bound, in double with certify.cuh's relative slack on every quantity (see certify.h for the
// GEMM's error g and the L2 key's error e). A row whose exact value E meets the radius r:
//   L2: |E - D| <= rerank D + absolute (D the real squared distance), so D <= (r + absolute) /
//       (1 - rerank) = R, its key K = D - ||x||^2 <= R - ||x||^2 and its approximate key at most
//       R - ||x||^2 + e.
//   similarities: |E - <x, y>| <= rerank |x| |y| + absolute, so K = -<x, y> <= -r + rerank |x| |y|
//       + absolute and the approximate key (the GEMM's -<x, y>) at most that plus g.
__global__ void thresholds_kernel(const CertifyModel m, double r, const double* query_stats,
                                  const unsigned* base_stats, int64_t nq, double band_fraction, float* thresholds,
                                  unsigned* wide) {
  constexpr double kSlack = kCertifySlack;
  const double y2 = double(__uint_as_float(base_stats[0])), ry2 = double(__uint_as_float(base_stats[1]));
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < nq; q += int64_t(gridDim.x) * blockDim.x) {
    const double x2 = query_stats[2 * q], rx2 = query_stats[2 * q + 1];
    float limit = __int_as_float(0x7f800000);  // +inf: every row a candidate
    bool is_wide = false;
    if (isfinite(x2) && isfinite(rx2) && isfinite(y2) && isfinite(ry2)) {
      const double x = sqrt(x2) * (1 + kSlack), y = sqrt(y2) * (1 + kSlack);
      const double rx = m.rounded_inputs ? sqrt(rx2) * (1 + kSlack) : 0;
      const double ry = m.rounded_inputs ? sqrt(ry2) * (1 + kSlack) : 0;
      const double xt = x + rx, yt = y + ry;  // bounds on the GEMM inputs' norms
      const double g = (rx * yt + x * ry + m.accumulation * xt * yt + m.absolute) * (1 + kSlack);
      double bound;
      bool in_range;
      if (m.l2) {
        const double product = 2 * xt * yt * (1 + m.accumulation), norm = y * y * (1 + m.norms);
        in_range = product + norm < kMaxCertifiedMagnitude;
        const double e = (2 * g + m.norms * y * y + kFloatUnit * (product + norm) + m.absolute) * (1 + kSlack);
        const double big_r = (r + m.absolute) / (1 - m.rerank) * (1 + kSlack);
        bound = big_r - x2 * (1 - kSlack) + e;
        is_wide = in_range && e > band_fraction * big_r;
      } else {
        in_range = xt * yt * (1 + m.accumulation) < kMaxCertifiedMagnitude;
        bound = -r + (g + m.rerank * x * y + m.absolute) * (1 + kSlack);
      }
      if (in_range && !isnan(bound)) {
        bound += fabs(bound) * kSlack + m.absolute;
        limit = __double2float_ru(bound);  // rounds up; beyond float's range: +inf
      }
    }
    thresholds[q] = limit;
    if (is_wide && wide != nullptr) atomicAdd(wide, 1u);
  }
}

// ---- the filter -------------------------------------------------------------------------------------

// A block takes kChunk columns of one tile row at a time: each thread kLoads float4 loads, so a
// warp reads 512 contiguous bytes per load.
constexpr int kLoads = 2;
constexpr int kChunk = kThreads * 4 * kLoads;
// Blocks resident per multiprocessor: 40 registers a thread (the next task's tile values stay in
// registers through the exact checks; at 8 blocks, 32 registers, they spill) and 24 KB of shared
// memory each. The grid is a few rounds of them, each block looping over (row, chunk) tasks.
constexpr int kBlocksPerSm = 6;
constexpr int kRounds = 4;

// The exact value of exact_distances.h (L2: the squared distance; similarities: the product, not
// negated), bit for bit its exact_key's.
__device__ __forceinline__ float exact_value(const float* x, const float* y, int64_t dim, bool l2, bool vec4) {
  const float key = exact_key(y, x, dim, 0, l2, vec4);
  return l2 ? key : -key;
}

__device__ __forceinline__ bool row_allowed(const uint8_t* bits, int64_t nbits, int64_t row) {
  return bits == nullptr || (row < nbits && ((bits[row >> 3] >> (row & 7)) & 1));
}

// A slot in a shared-memory list of *count entries for every lane where take is set (-1 elsewhere),
// with one shared atomic per warp. Every lane of the warp must call it (the loops around it are
// uniform across the block).
__device__ __forceinline__ int warp_slot(bool take, int* count) {
  const unsigned mask = __ballot_sync(kFullWarp, take);
  if (mask == 0) return -1;
  const int lane = threadIdx.x % kWarpSize;
  int first = 0;
  if (lane == 0) first = atomicAdd(count, __popc(mask));
  first = __shfl_sync(kFullWarp, first, 0);
  return take ? first + __popc(mask & ((1u << lane) - 1u)) : -1;
}

// This thread's kPerThread tile values of task `task` (tile row r, columns chunk0 ..); columns beyond
// the tile read as zeros (and are skipped).
constexpr int kPerThread = 4 * kLoads;
__device__ __forceinline__ void load_keys(const RangeTile& t, int64_t task, int64_t chunks, float (&v)[kPerThread]) {
  const int64_t r = task / chunks;
  const int64_t chunk0 = (task - r * chunks) * kChunk;
  const float* keys = t.tile + r * t.ld;
#pragma unroll
  for (int j = 0; j < kLoads; ++j) {
    const int64_t c = chunk0 + (int64_t(j) * kThreads + threadIdx.x) * 4;
    if (c + 4 <= t.cols) {
      const float4 k4 = *reinterpret_cast<const float4*>(keys + c);
      v[4 * j] = k4.x;
      v[4 * j + 1] = k4.y;
      v[4 * j + 2] = k4.z;
      v[4 * j + 3] = k4.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[4 * j + e] = c + e < t.cols ? keys[c + e] : 0.f;
    }
  }
}

// The biases (L2: the rows' norms) of this thread's columns of a task starting at chunk0.
__device__ __forceinline__ void load_biases(const RangeTile& t, int64_t chunk0, bool bias_vec4,
                                            float (&b)[kPerThread]) {
#pragma unroll
  for (int j = 0; j < kLoads; ++j) {
    const int64_t c = chunk0 + (int64_t(j) * kThreads + threadIdx.x) * 4;
    if (c + 4 <= t.cols && bias_vec4) {
      const float4 b4 = __ldg(reinterpret_cast<const float4*>(t.bias + c));
      b[4 * j] = b4.x;
      b[4 * j + 1] = b4.y;
      b[4 * j + 2] = b4.z;
      b[4 * j + 3] = b4.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) b[4 * j + e] = c + e < t.cols ? __ldg(t.bias + c + e) : 0.f;
    }
  }
}

__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    filter_kernel(const RangeTile t, const RangeHitBuffer out, bool bias_vec4, bool exact_vec4) {
  __shared__ int32_t candidates[kChunk];  // columns of the chunk whose key passed
  __shared__ int32_t hit_columns[kChunk];
  __shared__ float hit_values[kChunk];
  __shared__ int candidate_count, hit_count;
  __shared__ unsigned long long first_slot;
  const int64_t chunks = (t.cols + kChunk - 1) / kChunk;
  const int64_t tasks = t.rows * chunks;
  // A task's tile values are loaded during the previous task's exact checks (into registers).
  float v[kPerThread];
  if (int64_t(blockIdx.x) < tasks) load_keys(t, blockIdx.x, chunks, v);
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t r = task / chunks;
    const int64_t chunk0 = (task - r * chunks) * kChunk;
    if (threadIdx.x == 0) {
      candidate_count = 0;
      hit_count = 0;
    }
    __syncthreads();

    // Candidates: the approximate key within the query's threshold (NaN keys pass: the exact
    // value decides), and the row allowed.
    const float limit = t.thresholds[r];
    float b[kPerThread];
    if (t.bias != nullptr) load_biases(t, chunk0, bias_vec4, b);
#pragma unroll
    for (int j = 0; j < kLoads; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t col = chunk0 + (int64_t(j) * kThreads + threadIdx.x) * 4 + e;
        bool take = false;
        if (col < t.cols) {
          const float key = t.bias != nullptr ? v[4 * j + e] + b[4 * j + e] : v[4 * j + e];
          take = !(key > limit) && row_allowed(t.filter, t.filter_bits, t.c0 + col);
        }
        const int slot = warp_slot(take, &candidate_count);
        if (slot >= 0) candidates[slot] = int32_t(col);
      }
    }
    if (task + gridDim.x < tasks) load_keys(t, task + gridDim.x, chunks, v);
    __syncthreads();

    // Hits: the candidates' exact values against the radius, a thread a candidate.
    const int found = candidate_count;
    const float* query = t.queries + r * t.dim;
    for (int i0 = 0; i0 < found; i0 += kThreads) {
      const int i = i0 + threadIdx.x;
      bool hit = false;
      int32_t col = 0;
      float value = 0.f;
      if (i < found) {
        col = candidates[i];
        value = exact_value(query, t.base + (t.c0 + col) * t.dim, t.dim, t.l2, exact_vec4);
        hit = t.l2 ? value <= t.radius : value >= t.radius;
      }
      const int slot = warp_slot(hit, &hit_count);
      if (slot >= 0) {
        hit_columns[slot] = col;
        hit_values[slot] = value;
      }
    }
    __syncthreads();

    // One global atomic per block and chunk reserves the chunk's slots.
    const int hits = hit_count;
    if (hits > 0) {
      if (threadIdx.x == 0) {
        first_slot = atomicAdd(out.tally, static_cast<unsigned long long>(hits));
        atomicAdd(out.tally + 1 + r, static_cast<unsigned long long>(hits));
      }
      __syncthreads();
      const unsigned long long first = first_slot;
      for (int i = threadIdx.x; i < hits; i += kThreads) {
        const unsigned long long slot = first + static_cast<unsigned long long>(i);
        if (slot < static_cast<unsigned long long>(out.capacity)) {
          out.query[slot] = int32_t(r);
          out.row[slot] = int32_t(t.c0 + hit_columns[i]);
          out.value[slot] = hit_values[i];
        }
      }
    }
    __syncthreads();  // the shared lists and counters are free for the next task
  }
}

// ---- scatter and decode ---------------------------------------------------------------------------

constexpr unsigned kSignBit = 0x80000000u;

// (ranking key, row) as one unsigned 64-bit key: the key's float bits made to order as unsigned
// integers (negative: all bits flipped; positive: the sign bit set), then the row. -0 ranks as +0
// (equal keys go by row, as the float comparison would have it).
__device__ __forceinline__ uint64_t sort_key(float value, int32_t row, bool l2) {
  float key = l2 ? value : -value;
  key = key == 0.f ? 0.f : key;
  const unsigned bits = __float_as_uint(key);
  const unsigned ordered = (bits & kSignBit) != 0 ? ~bits : (bits | kSignBit);
  return (uint64_t(ordered) << 32) | uint64_t(uint32_t(row));
}

__device__ __forceinline__ float key_value(uint64_t key, bool l2) {
  const unsigned ordered = unsigned(key >> 32);
  const unsigned bits = (ordered & kSignBit) != 0 ? (ordered & ~kSignBit) : ~ordered;
  const float k = __uint_as_float(bits);
  const float value = l2 ? k : -k;
  return value == 0.f ? 0.f : value;
}

__global__ void scatter_kernel(const int32_t* query, const int32_t* row, const float* value, int64_t count, int32_t qa,
                               int32_t qb, const int64_t* offsets, unsigned long long* cursor, bool l2,
                               uint64_t* keys) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int32_t q = query[i];
    if (q < qa || q >= qb) continue;
    const unsigned long long at = atomicAdd(cursor + (q - qa), 1ull);
    keys[offsets[q - qa] + int64_t(at)] = sort_key(value[i], row[i], l2);
  }
}

__global__ void decode_kernel(const uint64_t* keys, int64_t count, bool l2, int64_t* rows, float* distances) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t key = keys[i];
    rows[i] = int64_t(uint32_t(key));
    distances[i] = key_value(key, l2);
  }
}

}  // namespace

void launch_range_thresholds(const CertifyModel& model, float radius, const double* query_stats,
                             const unsigned* base_stats, int64_t nq, double band_fraction, float* thresholds,
                             unsigned* wide, cudaStream_t stream) {
  if (nq == 0) return;
  thresholds_kernel<<<blocks_for(nq), kThreads, 0, stream>>>(model, double(radius), query_stats, base_stats, nq,
                                                             band_fraction, thresholds, wide);
  QV_LAUNCH_CHECK("range thresholds_kernel");
}

void launch_range_filter(const RangeTile& tile, const RangeHitBuffer& out, int sm_count, cudaStream_t stream) {
  if (tile.rows == 0 || tile.cols == 0) return;
  const int64_t tasks = tile.rows * ((tile.cols + kChunk - 1) / kChunk);
  const int64_t grid = std::min<int64_t>(tasks, std::max(1, sm_count) * int64_t(kBlocksPerSm * kRounds));
  const bool bias_vec4 = tile.bias != nullptr && aligned16(tile.bias);
  const bool exact_vec4 = tile.dim % 4 == 0 && aligned16(tile.base) && aligned16(tile.queries);
  filter_kernel<<<static_cast<unsigned>(grid), kThreads, 0, stream>>>(tile, out, bias_vec4, exact_vec4);
  QV_LAUNCH_CHECK("range filter_kernel");
}

void launch_range_scatter(const int32_t* query, const int32_t* row, const float* value, int64_t count, int32_t qa,
                          int32_t qb, const int64_t* offsets, unsigned long long* cursor, bool l2, uint64_t* keys,
                          cudaStream_t stream) {
  if (count == 0) return;
  scatter_kernel<<<blocks_for(count), kThreads, 0, stream>>>(query, row, value, count, qa, qb, offsets, cursor, l2,
                                                             keys);
  QV_LAUNCH_CHECK("range scatter_kernel");
}

void launch_range_decode(const uint64_t* keys, int64_t count, bool l2, int64_t* rows, float* distances,
                         cudaStream_t stream) {
  if (count == 0) return;
  decode_kernel<<<blocks_for(count), kThreads, 0, stream>>>(keys, count, l2, rows, distances);
  QV_LAUNCH_CHECK("range decode_kernel");
}

}  // namespace quiver::gpu
