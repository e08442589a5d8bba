// Exact k-NN on the GPU (gpu.h's knn): the paper's §5.1. Distances come from cuBLAS SGEMM, tile by
// tile: a tile holds alpha * <x, y> for a block of queries against a block of base rows (alpha = -2
// for L2, -1 for similarities, so that smaller is always closer). The selection kernel reads each
// tile once, adds ||y||^2 on the fly for L2 (||x||^2 is constant per query and waits until the end),
// and continues from the running k best of the query block, so no tile is written twice and the
// partial results never leave the device. Consecutive tiles alternate between two streams and two
// buffers: the GEMM of one tile runs while the previous tile is selected.
//
// Per query tile the work is: GEMM + select for every base tile (the selections chained by an event,
// since each continues from the previous one), then a finalize kernel that adds ||x||^2, turns keys
// into distances and rows into 64-bit ids. Results meant for host memory go back on the copy stream
// while the next query tile computes.
//
// The fast modes (gpu.h's ComputeMode) run the same loop with another GEMM (TF32 on the floats, or
// FP16 / BF16 on half copies made at the start) and a larger k, knn_candidate_count(k); then, per
// query tile, the candidates' exact float32 distances (compute_modes.h's re-rank), a selection of
// the k best of them, and the finalize.
#include <algorithm>
#include <limits>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/error.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/flat/compute_modes.h"
#include "cuda/flat/kernels.h"
#include "cuda/select/select.h"

namespace quiver::gpu {

namespace {

// Base rows per tile: at least this many (long rows keep the selection efficient), and at least
// kColumnsPerK * k, so that continuing from the previous k best (reading and writing k entries per
// query and tile) stays small next to the tile itself.
constexpr int64_t kMinTileColumns = 8192;
constexpr int64_t kColumnsPerK = 64;
// Tile widths are multiples of this: each row of a tile then starts 16-byte aligned (float4 loads)
// and a GEMM tile edge falls on cuBLAS's blocking.
constexpr int64_t kColumnAlign = 128;
// The widest tile: the selection takes rows of fewer than 2^31 columns, cuBLAS int dimensions.
constexpr int64_t kMaxTileColumns = int64_t(1) << 30;
// Rows of the base are numbered in int32 on the device, with the largest value as "no row".
constexpr int64_t kMaxRows = std::numeric_limits<int32_t>::max() - 1;

constexpr int kChainEvent = 0;    // after the latest selection or finalize
constexpr int kTileDoneEvent = 1;  // and 2: a query tile's results are final (alternating)
constexpr int kInputsEvent = 3;   // inputs uploaded and norms computed (on stream 0)

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

struct TilePlan {
  int64_t query_rows;  // queries per tile
  int64_t columns;     // base rows per tile (a multiple of kColumnAlign unless it covers all)
};

// Tiles of at most tile_floats entries: wide enough for the selection, then as many queries as fit;
// if all queries fit, the leftover widens the tile. Query tiles are balanced.
TilePlan plan_tiles(int64_t tile_floats, int64_t nq, int64_t n, int64_t k) {
  const int64_t all_columns = std::min(round_up(n, 4), kMaxTileColumns);
  int64_t columns = std::min(all_columns, round_up(std::max(kMinTileColumns, kColumnsPerK * k), kColumnAlign));
  int64_t query_rows = std::max<int64_t>(1, tile_floats / columns);
  if (query_rows >= nq) {
    query_rows = nq;
    columns = std::min(all_columns, std::max(columns, tile_floats / nq / kColumnAlign * kColumnAlign));
  }
  const int64_t query_tiles = (nq + query_rows - 1) / query_rows;
  query_rows = (nq + query_tiles - 1) / query_tiles;
  return {query_rows, columns};
}

}  // namespace

void knn(Resources& resources, Metric metric, const float* base, const float* base_norms, int64_t n,
         int64_t dim, const float* queries, int64_t nq, int64_t k, float* distances, int64_t* ids,
         const RowFilter& filter, ComputeMode mode) {
  require(is_valid_metric(static_cast<int32_t>(metric)), "metric: ", static_cast<int32_t>(metric),
          " is not L2, inner product or cosine");
  require(dim >= 1, "dim = ", dim, " is not positive");
  require(n >= 0, "n = ", n, " is negative");
  require(nq >= 0, "nq = ", nq, " is negative");
  require(k >= 1 && k <= kMaxSelectK, "k = ", k, " is outside 1 .. ", kMaxSelectK);
  require(n == 0 || base != nullptr, "base is null");
  require(nq == 0 || (queries != nullptr && distances != nullptr && ids != nullptr),
          "queries, distances and ids must not be null");
  require(filter.nbits >= 0, "filter nbits = ", filter.nbits, " is negative");
  require(mode == ComputeMode::fp32 || mode == ComputeMode::tf32 || mode == ComputeMode::fp16 ||
              mode == ComputeMode::bf16,
          "mode: ", static_cast<int32_t>(mode), " is not fp32, tf32, fp16 or bf16");
  if (n > kMaxRows) fail(Status::unsupported, "the GPU exact search takes at most ", kMaxRows, " rows (n = ", n, ")");
  if (nq == 0) return;

  Session session(resources);
  const int device = resources.device();
  DevicePool& pool = resources.pool();
  HostStaging& staging = resources.staging();
  cudaStream_t s0 = resources.stream(0);
  const bool l2 = metric == Metric::l2;
  const bool fast = mode != ComputeMode::fp32;
  const bool half = mode == ComputeMode::fp16 || mode == ComputeMode::bf16;
  // The selection keeps kc per query: k, or the candidates that the fast modes re-rank.
  const int64_t kc = fast ? knn_candidate_count(k) : k;
  const bool outputs_on_device = memory_kind(distances, device) == MemoryKind::device &&
                                 memory_kind(ids, device) == MemoryKind::device;

  if (n == 0) {
    const float missing = missing_distance(metric);
    if (outputs_on_device) {
      launch_fill_missing(distances, ids, nq * k, missing, s0);
    } else {
      std::fill(distances, distances + nq * k, missing);
      std::fill(ids, ids + nq * k, int64_t{-1});
    }
    session.finish();
    return;
  }

  // ---- inputs on the device (stream 0) ----
  PoolBuffer<float> base_copy;
  const float* y = base;
  if (memory_kind(base, device) != MemoryKind::device) {
    base_copy = PoolBuffer<float>(pool, n * dim);
    copy_to_device(staging, device, base_copy.get(), base, size_t(n * dim) * sizeof(float), s0);
    y = base_copy.get();
  }
  PoolBuffer<float> norms_copy;
  const float* y_norms = nullptr;
  if (l2) {
    if (base_norms != nullptr && memory_kind(base_norms, device) == MemoryKind::device) {
      y_norms = base_norms;
    } else {
      norms_copy = PoolBuffer<float>(pool, n);
      if (base_norms != nullptr) {
        copy_to_device(staging, device, norms_copy.get(), base_norms, size_t(n) * sizeof(float), s0);
      } else {
        launch_row_norms(y, n, dim, norms_copy.get(), s0);
      }
      y_norms = norms_copy.get();
    }
  }
  PoolBuffer<uint8_t> filter_copy;
  if (filter.bits != nullptr) {
    const int64_t bytes = std::max<int64_t>(1, (filter.nbits + 7) / 8);
    filter_copy = PoolBuffer<uint8_t>(pool, bytes);
    if (filter.nbits > 0) copy_to_device(staging, device, filter_copy.get(), filter.bits, size_t(bytes), s0);
  }
  PoolBuffer<float> query_copy;
  const float* x = queries;
  if (memory_kind(queries, device) != MemoryKind::device) {
    query_copy = PoolBuffer<float>(pool, nq * dim);
    copy_to_device(staging, device, query_copy.get(), queries, size_t(nq * dim) * sizeof(float), s0);
    x = query_copy.get();
  }
  PoolBuffer<float> query_norms;
  if (l2 && !fast) {  // the re-rank computes whole distances
    query_norms = PoolBuffer<float>(pool, nq);
    launch_row_norms(x, nq, dim, query_norms.get(), s0);
  }
  // The GEMM's operands: the floats, or their half copies (rows padded to half_row_stride).
  const void* gemm_y = y;
  const void* gemm_x = x;
  int64_t depth = dim;
  PoolBuffer<uint16_t> base_half, query_half;
  if (half) {
    depth = half_row_stride(dim);
    base_half = PoolBuffer<uint16_t>(pool, n * depth);
    query_half = PoolBuffer<uint16_t>(pool, nq * depth);
    PoolBuffer<int> overflow(pool, 2);  // base, queries
    QV_CUDA_CHECK(cudaMemsetAsync(overflow.get(), 0, 2 * sizeof(int), s0));
    launch_to_half(y, n, dim, mode, base_half.get(), overflow.get(), s0);
    launch_to_half(x, nq, dim, mode, query_half.get(), overflow.get() + 1, s0);
    if (mode == ComputeMode::fp16) {
      int flags[2] = {0, 0};
      QV_CUDA_CHECK(cudaMemcpyAsync(flags, overflow.get(), sizeof flags, cudaMemcpyDeviceToHost, s0));
      QV_CUDA_CHECK(cudaStreamSynchronize(s0));
      if (flags[0] != 0 || flags[1] != 0)
        fail(Status::invalid_argument, "mode fp16: ", flags[0] != 0 ? "base" : "query",
             " values beyond the half-precision range (magnitude above 65504); use bf16, tf32 or fp32");
    }
    gemm_y = base_half.get();
    gemm_x = query_half.get();
  }

  // ---- buffers of the search ----
  const TilePlan plan = plan_tiles(resources.tile_bytes() / int64_t(sizeof(float)), nq, n, kc);
  const int64_t column_tiles = (n + plan.columns - 1) / plan.columns;
  const int64_t last_columns = n - (column_tiles - 1) * plan.columns;
  const int64_t last_query_rows = nq - (nq - 1) / plan.query_rows * plan.query_rows;
  int64_t workspace_bytes = 0;
  int64_t rerank_workspace_bytes = 0;
  for (int64_t rows : {plan.query_rows, last_query_rows}) {
    for (int64_t cols : {plan.columns, last_columns})
      workspace_bytes = std::max(workspace_bytes, select_workspace_bytes<int32_t>(resources.limits(), rows, cols, kc));
    if (fast)
      rerank_workspace_bytes =
          std::max(rerank_workspace_bytes, select_workspace_bytes<int32_t>(resources.limits(), rows, kc, k));
  }
  PoolBuffer<float> tiles[2];
  const int64_t tile_entries = plan.query_rows * round_up(plan.columns, 4);
  tiles[0] = PoolBuffer<float>(pool, tile_entries);
  tiles[1] = PoolBuffer<float>(pool, tile_entries);
  PoolBuffer<char> workspace(pool, workspace_bytes);
  PoolBuffer<float> best_keys(pool, nq * kc);  // the running kc best of each query
  PoolBuffer<int32_t> best_rows(pool, nq * kc);
  PoolBuffer<float> rerank_keys, final_keys;  // fast modes: exact keys of the candidates, the k best
  PoolBuffer<int32_t> final_rows;
  PoolBuffer<char> rerank_workspace;
  if (fast) {
    rerank_keys = PoolBuffer<float>(pool, nq * kc);
    final_keys = PoolBuffer<float>(pool, nq * k);
    final_rows = PoolBuffer<int32_t>(pool, nq * k);
    rerank_workspace = PoolBuffer<char>(pool, rerank_workspace_bytes);
  }
  PoolBuffer<float> out_distances;
  PoolBuffer<int64_t> out_ids;
  float* result_d = distances;
  int64_t* result_i = ids;
  if (!outputs_on_device) {
    out_distances = PoolBuffer<float>(pool, nq * k);
    out_ids = PoolBuffer<int64_t>(pool, nq * k);
    result_d = out_distances.get();
    result_i = out_ids.get();
  }

  // Stream 1 starts after the inputs are ready.
  QV_CUDA_CHECK(cudaEventRecord(resources.event(kInputsEvent), s0));
  QV_CUDA_CHECK(cudaStreamWaitEvent(resources.stream(1), resources.event(kInputsEvent), 0));

  const float alpha = l2 ? -2.f : -1.f;
  const size_t gemm_value_bytes = half ? sizeof(uint16_t) : sizeof(float);
  cudaStream_t copy_stream = resources.stream(Resources::kCopyStream);
  // Results of query tile t go to the host while tile t + 1 computes.
  auto download = [&](int64_t q0, int64_t rows, int tile_parity) {
    QV_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, resources.event(kTileDoneEvent + tile_parity), 0));
    copy_from_device(staging, device, distances + q0 * k, result_d + q0 * k, size_t(rows * k) * sizeof(float),
                     copy_stream);
    copy_from_device(staging, device, ids + q0 * k, result_i + q0 * k, size_t(rows * k) * sizeof(int64_t),
                     copy_stream);
  };

  int64_t step = 0;  // tiles so far; its parity picks the stream and the buffer
  int64_t pending = -1;  // query tile whose results still go to the host
  int64_t pending_rows = 0;
  for (int64_t q0 = 0, t = 0; q0 < nq; q0 += plan.query_rows, ++t) {
    const int64_t rows = std::min(plan.query_rows, nq - q0);
    cudaStream_t stream = nullptr;
    for (int64_t c = 0; c < column_tiles; ++c, ++step) {
      const int64_t c0 = c * plan.columns;
      const int64_t cols = std::min(plan.columns, n - c0);
      const int64_t ld = round_up(cols, 4);
      const int slot = static_cast<int>(step & 1);
      stream = resources.stream(slot);
      float* tile = tiles[slot].get();
      // The tile buffer is free: the selection that last read it ran on this same stream.
      distance_gemm(resources.blas(slot), mode, cols, rows, depth, alpha,
                    static_cast<const char*>(gemm_y) + size_t(c0 * depth) * gemm_value_bytes, depth,
                    static_cast<const char*>(gemm_x) + size_t(q0 * depth) * gemm_value_bytes, depth, tile, ld);
      // Selections run in order: each continues from the previous one's results (and they share
      // the workspace).
      if (step > 0) QV_CUDA_CHECK(cudaStreamWaitEvent(stream, resources.event(kChainEvent), 0));
      SelectRequest<int32_t> request;
      request.keys = tile;
      request.ld = ld;
      request.rows = rows;
      request.cols = cols;
      request.k = kc;
      request.column_bias = l2 ? y_norms + c0 : nullptr;
      request.id_base = c0;
      request.prev_keys = c > 0 ? best_keys.get() + q0 * kc : nullptr;
      request.prev_ids = c > 0 ? best_rows.get() + q0 * kc : nullptr;
      request.filter = filter.bits != nullptr ? filter_copy.get() : nullptr;
      request.filter_bits = filter.nbits;
      request.out_keys = best_keys.get() + q0 * kc;
      request.out_ids = best_rows.get() + q0 * kc;
      request.keep_missing_as_sentinel = true;
      select_rows(request, resources.limits(), workspace.get(), stream);
      QV_CUDA_CHECK(cudaEventRecord(resources.event(kChainEvent), stream));
    }
    if (!fast) {
      launch_finalize(best_keys.get() + q0 * k, best_rows.get() + q0 * k, rows, k,
                      l2 ? query_norms.get() + q0 : nullptr, l2, result_d + q0 * k, result_i + q0 * k, stream);
    } else {
      // The candidates' exact distances, the k best of them (ties to the smaller row), the finalize.
      launch_rerank(y, x + q0 * dim, dim, best_rows.get() + q0 * kc, rows, kc, l2, rerank_keys.get() + q0 * kc,
                    stream);
      SelectRequest<int32_t> rerank;
      rerank.keys = rerank_keys.get() + q0 * kc;
      rerank.ld = kc;
      rerank.rows = rows;
      rerank.cols = kc;
      rerank.k = k;
      rerank.ids = best_rows.get() + q0 * kc;
      rerank.out_keys = final_keys.get() + q0 * k;
      rerank.out_ids = final_rows.get() + q0 * k;
      rerank.keep_missing_as_sentinel = true;
      select_rows(rerank, resources.limits(), rerank_workspace.get(), stream);
      launch_finalize(final_keys.get() + q0 * k, final_rows.get() + q0 * k, rows, k, nullptr, l2,
                      result_d + q0 * k, result_i + q0 * k, stream);
    }
    QV_CUDA_CHECK(cudaEventRecord(resources.event(kChainEvent), stream));
    if (!outputs_on_device) {
      QV_CUDA_CHECK(cudaEventRecord(resources.event(kTileDoneEvent + int(t & 1)), stream));
      if (pending >= 0) download(pending, pending_rows, int((t - 1) & 1));
      pending = q0;
      pending_rows = rows;
    }
  }
  if (pending >= 0) download(pending, pending_rows, int(((nq - 1) / plan.query_rows) & 1));
  session.finish();
}

}  // namespace quiver::gpu
