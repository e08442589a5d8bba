#include "cuda/graph/layer_scan.h"

#include <cfloat>

#include "cpp/core/error.h"
#include "cuda/core/error.h"

namespace quiver::gpu {

namespace {

constexpr int kWarp = 32;
constexpr int kWarps = 8;
constexpr int kRowsPerWarp = 4;
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;

// Keeps the `starts` smallest (key, row) pairs, sorted, ties to the smaller row. Every lane of a warp
// calls it with the same values, so every lane holds the same list.
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

// Block (x, q): layer rows [x * kRowsPerBlock, +kRowsPerBlock) against query q, a warp a row at a
// time (lanes over the dimensions); the block's `starts` best go to part[q][x].
__global__ void scan_rows_kernel(const float* vectors, int64_t rows, int dim, bool inner_product,
                                 const float* queries, int starts, float* part_keys, int32_t* part_rows) {
  __shared__ float keys[kWarps][kMaxLayerScanStarts];
  __shared__ int32_t found[kWarps][kMaxLayerScanStarts];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t q = blockIdx.y;
  const float* query = queries + q * dim;
  Best best;
  best.clear();
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + warp * kRowsPerWarp + i;
    if (r >= rows) break;
    const float* v = vectors + r * dim;
    float s = 0;
    for (int d = lane; d < dim; d += kWarp) {
      const float x = query[d], y = v[d];
      s = inner_product ? fmaf(x, y, s) : fmaf(x - y, x - y, s);
    }
    for (int m = kWarp / 2; m > 0; m /= 2) s += __shfl_xor_sync(0xffffffffu, s, m);
    best.offer(inner_product ? -s : s, int32_t(r), starts);
  }
  if (lane == 0) {
    for (int j = 0; j < starts; ++j) {
      keys[warp][j] = best.key[j];
      found[warp][j] = best.row[j];
    }
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  Best block;
  block.clear();
  for (int w = 0; w < kWarps; ++w)
    for (int j = 0; j < starts; ++j) block.offer(keys[w][j], found[w][j], starts);
  const int64_t at = (q * gridDim.x + blockIdx.x) * starts;
  for (int j = 0; j < starts; ++j) {
    part_keys[at + j] = block.key[j];
    part_rows[at + j] = block.row[j];
  }
}

// Thread q: the best `starts` of query q's parts, as rows of the graph (ids; -1 where the layer has
// fewer rows).
__global__ void merge_parts_kernel(const float* part_keys, const int32_t* part_rows, int parts, int starts,
                                   const int64_t* ids, int64_t nq, int64_t* out) {
  const int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q >= nq) return;
  Best best;
  best.clear();
  const int64_t first = q * parts * starts;
  for (int64_t i = first; i < first + int64_t(parts) * starts; ++i) best.offer(part_keys[i], part_rows[i], starts);
  for (int j = 0; j < starts; ++j) {
    const int32_t r = best.row[j];
    out[q * starts + j] = r < 0 ? -1 : ids != nullptr ? ids[r] : r;
  }
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
  scan_rows_kernel<<<dim3(unsigned(parts), unsigned(nq)), kWarps * kWarp, 0, stream>>>(
      layer.vectors.get(), layer.rows, int(layer.dim), inner_product, queries, int(starts), part_keys.get(),
      part_rows.get());
  QV_LAUNCH_CHECK("scan_rows_kernel");
  constexpr int kMergeThreads = 128;
  merge_parts_kernel<<<unsigned((nq + kMergeThreads - 1) / kMergeThreads), kMergeThreads, 0, stream>>>(
      part_keys.get(), part_rows.get(), parts, int(starts), layer.ids.size() > 0 ? layer.ids.get() : nullptr, nq,
      out);
  QV_LAUNCH_CHECK("merge_parts_kernel");
}

}  // namespace quiver::gpu
