#include "cuda/graph/layer_scan.h"

#include <cfloat>
#include <cstdint>

#include "cpp/core/error.h"
#include "cuda/core/error.h"

namespace quiver::gpu {

namespace {

constexpr int kWarp = 32;
// A warp a row, 32 rows a block: 4 096 warps in flight for a 4 096-row layer, so one query's scan
// fills the device (8 warps of 4 rows each took 20 us on Fashion-MNIST's 784 floats, ncu).
constexpr int kWarps = 32;
constexpr int kRowsPerBlock = kWarps;

// Keeps the `starts` smallest (key, row) pairs, sorted, ties to the smaller row: one lane's list in
// warp_best.
struct Best {
  float key[kMaxLayerScanStarts];
  int32_t row[kMaxLayerScanStarts];

  __device__ void clear() {
    for (int i = 0; i < kMaxLayerScanStarts; ++i) {
      key[i] = FLT_MAX;
      row[i] = -1;
    }
  }
  __device__ static bool before(float ka, int32_t ra, float kb, int32_t rb) {
    return ka < kb || (ka == kb && ra >= 0 && (rb < 0 || ra < rb));
  }
  __device__ void offer(float k, int32_t r, int starts) {
    if (!before(k, r, key[starts - 1], row[starts - 1])) return;
    int j = starts - 1;
    for (; j > 0 && before(k, r, key[j - 1], row[j - 1]); --j) {
      key[j] = key[j - 1];
      row[j] = row[j - 1];
    }
    key[j] = k;
    row[j] = r;
  }
};

// The `starts` best of entries [0, count) of (keys, rows), merged by one warp: each lane keeps the best
// of every 32nd entry, then `starts` rounds take the warp's smallest head. Every lane returns the same
// list. Rows are unique (-1 marks an empty entry), so exactly one lane owns each real winner.
__device__ Best warp_best(const float* keys, const int32_t* rows, int64_t count, int starts) {
  const int lane = threadIdx.x % kWarp;
  constexpr int kLoads = 4;  // loads in flight a lane, ahead of the insertions that use them
  Best mine;
  mine.clear();
  for (int64_t first = lane; first < count; first += kLoads * kWarp) {
    float k[kLoads];
    int32_t r[kLoads];
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int64_t at = first + i * kWarp;
      k[i] = at < count ? keys[at] : FLT_MAX;
      r[i] = at < count ? rows[at] : -1;
    }
#pragma unroll
    for (int i = 0; i < kLoads; ++i) mine.offer(k[i], r[i], starts);
  }
  Best out;
  out.clear();
  int taken = 0;
  for (int j = 0; j < starts; ++j) {
    const float head_key = taken < starts ? mine.key[taken] : FLT_MAX;
    const int32_t head_row = taken < starts ? mine.row[taken] : -1;
    float key = head_key;
    int32_t row = head_row;
    for (int m = kWarp / 2; m > 0; m /= 2) {
      const float other_key = __shfl_xor_sync(0xffffffffu, key, m);
      const int32_t other_row = __shfl_xor_sync(0xffffffffu, row, m);
      if (Best::before(other_key, other_row, key, row)) {
        key = other_key;
        row = other_row;
      }
    }
    out.key[j] = key;
    out.row[j] = row;
    if (row >= 0 && head_row == row) ++taken;
  }
  return out;
}

// Block (x, q): layer rows [x * kRowsPerBlock, +kRowsPerBlock) against query q, a warp a row (lanes
// over the dimensions); the block's `starts` best go to part[q][x].
template <bool kVec4>
__global__ void __launch_bounds__(kWarps * kWarp)
    scan_rows_kernel(const float* vectors, int64_t rows, int dim, bool inner_product, const float* queries,
                     int starts, float* part_keys, int32_t* part_rows) {
  __shared__ float keys[kWarps];
  __shared__ int32_t found[kWarps];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t q = blockIdx.y;
  const float* query = queries + q * dim;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + warp;
  const bool here = row < rows;
  const float* v = vectors + (here ? row : 0) * dim;
  float s = 0;
  auto step = [&](float x, float y, float acc) { return inner_product ? fmaf(x, y, acc) : fmaf(x - y, x - y, acc); };
  if (here) {
    if constexpr (kVec4) {
      const float4* query4 = reinterpret_cast<const float4*>(query);
      const float4* v4 = reinterpret_cast<const float4*>(v);
#pragma unroll 4
      for (int d = lane; d < dim / 4; d += kWarp) {
        const float4 x = query4[d], y = __ldg(v4 + d);
        s = step(x.w, y.w, step(x.z, y.z, step(x.y, y.y, step(x.x, y.x, s))));
      }
    } else {
#pragma unroll 8
      for (int d = lane; d < dim; d += kWarp) s = step(query[d], __ldg(v + d), s);
    }
  }
  for (int m = kWarp / 2; m > 0; m /= 2) s += __shfl_xor_sync(0xffffffffu, s, m);
  if (lane == 0) {
    keys[warp] = here ? (inner_product ? -s : s) : FLT_MAX;
    found[warp] = here ? int32_t(row) : -1;
  }
  __syncthreads();
  if (warp != 0) return;
  const Best block = warp_best(keys, found, kWarps, starts);
  if (lane != 0) return;
  const int64_t at = (q * gridDim.x + blockIdx.x) * starts;
  for (int j = 0; j < starts; ++j) {
    part_keys[at + j] = block.key[j];
    part_rows[at + j] = block.row[j];
  }
}

// Warp q: the best `starts` of query q's parts, as rows of the graph (ids; -1 where the layer has
// fewer rows).
__global__ void merge_parts_kernel(const float* part_keys, const int32_t* part_rows, int parts, int starts,
                                   const int64_t* ids, int64_t nq, int64_t* out) {
  const int64_t q = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  if (q >= nq) return;
  const int64_t first = q * parts * starts;
  const Best best = warp_best(part_keys + first, part_rows + first, int64_t(parts) * starts, starts);
  const int lane = threadIdx.x % kWarp;
  if (lane >= starts) return;
  int32_t r = -1;
  for (int j = 0; j < starts; ++j)
    if (j == lane) r = best.row[j];
  out[q * starts + lane] = r < 0 ? -1 : ids != nullptr ? ids[r] : r;
}

}  // namespace

void scan_layer(const GraphDevice& layer, int64_t starts, int64_t nq, const float* queries, int64_t* out,
                DevicePool& pool, cudaStream_t stream) {
  require(layer.codes.size() == 0 && layer.vectors.size() > 0, "scan_layer: the layer holds no vectors");
  require(starts >= 1 && starts <= kMaxLayerScanStarts, "scan_layer: ", starts, " starts is outside 1 .. ",
          kMaxLayerScanStarts);
  require(layer.rows > 0 && nq <= 65535, "scan_layer: ", layer.rows, " rows, ", nq, " queries");
  if (nq == 0) return;
  const int parts = int((layer.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  PoolBuffer<float> part_keys(pool, nq * parts * starts);
  PoolBuffer<int32_t> part_rows(pool, nq * parts * starts);
  const bool inner_product = layer.metric == Metric::inner_product;
  const dim3 grid{unsigned(parts), unsigned(nq)};
  const bool vec4 = layer.dim % 4 == 0 && reinterpret_cast<uintptr_t>(queries) % 16 == 0 &&
                    reinterpret_cast<uintptr_t>(layer.vectors.get()) % 16 == 0;
  const auto scan_rows = vec4 ? scan_rows_kernel<true> : scan_rows_kernel<false>;
  scan_rows<<<grid, kWarps * kWarp, 0, stream>>>(layer.vectors.get(), layer.rows, int(layer.dim), inner_product,
                                                 queries, int(starts), part_keys.get(), part_rows.get());
  QV_LAUNCH_CHECK("scan_rows_kernel");
  constexpr int kMergeThreads = 128;  // 4 queries a block, a warp each
  merge_parts_kernel<<<unsigned((nq * kWarp + kMergeThreads - 1) / kMergeThreads), kMergeThreads, 0, stream>>>(
      part_keys.get(), part_rows.get(), parts, int(starts), layer.ids.size() > 0 ? layer.ids.get() : nullptr, nq,
      out);
  QV_LAUNCH_CHECK("merge_parts_kernel");
}

}  // namespace quiver::gpu
