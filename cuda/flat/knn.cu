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
//
// A base in host memory larger than the streaming budget (ResourcesOptions::stream_bytes) is not
// copied whole: it goes through two device chunk buffers, chunk i + 1 copied on the copy stream
// while chunk i is searched (every query tile against the chunk's base tiles, each query tile's
// selection continuing from its running best exactly as across base tiles). A chunk is a whole
// number of base tiles, so every GEMM and selection is the one the unstreamed search runs and the
// results are identical. Each chunk's norms are computed on the device (or copied from base_norms)
// and its half copy made there. The fast modes keep their enlarged candidate set across chunks and
// re-rank at the end from host memory: the candidates' rows are gathered on the host and copied
// into chunk 0, where the same re-rank kernel reads them (bit-identical keys); fp16's range check
// then happens after the search, still before any output is written.
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
constexpr int kChunkCopiedEvent = 4;  // and 5: a streamed chunk is on the device (copy stream)
constexpr int kChunkFreeEvent = 6;    // and 7: a streamed chunk's search is done
constexpr int kChunkReadyEvent = 8;   // the current chunk's norms and half copy (stream 0)
static_assert(kChunkReadyEvent < Resources::kEvents, "Resources::kEvents");

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

  // ---- streaming: a host base larger than the budget goes to the device chunk by chunk ----
  const TilePlan plan = plan_tiles(resources.tile_bytes() / int64_t(sizeof(float)), nq, n, kc);
  const MemoryKind base_kind = memory_kind(base, device);
  int64_t chunk_rows = n;  // base rows per chunk; n: the base is not streamed
  if (base_kind == MemoryKind::host_pageable || base_kind == MemoryKind::host_pinned) {
    int64_t budget = resources.stream_bytes();
    if (budget == 0) {
      size_t free_bytes = 0, total_bytes = 0;
      QV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      budget = int64_t(free_bytes / 4);
    }
    if (n * dim * int64_t(sizeof(float)) > budget) {
      // Two chunks of rows, each row with its floats, its half copy and its norm. A chunk is a whole
      // number of base tiles (at least one), so every GEMM and selection is the one the unstreamed
      // search runs, on the same rows: the results are identical.
      const int64_t row_bytes =
          2 * (dim * int64_t(sizeof(float)) + (half ? half_row_stride(dim) * 2 : 0) + (l2 ? 4 : 0));
      chunk_rows = std::max<int64_t>(1, budget / row_bytes / plan.columns) * plan.columns;
      if (chunk_rows >= n) chunk_rows = n;
    }
  }
  const bool streamed = chunk_rows < n;

  // ---- inputs on the device (stream 0) ----
  PoolBuffer<float> base_copy;
  const float* y = base;
  PoolBuffer<float> norms_copy;
  const float* y_norms = nullptr;
  const bool norms_on_device = base_norms != nullptr && memory_kind(base_norms, device) == MemoryKind::device;
  if (!streamed) {
    if (base_kind != MemoryKind::device) {
      base_copy = PoolBuffer<float>(pool, n * dim);
      copy_to_device(staging, device, base_copy.get(), base, size_t(n * dim) * sizeof(float), s0);
      y = base_copy.get();
    }
    if (l2) {
      if (norms_on_device) {
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
  PoolBuffer<int> overflow;  // base, queries
  // fp16: refuses values beyond half's range (after the conversions queued on s0).
  auto check_overflow = [&] {
    if (mode != ComputeMode::fp16) return;
    int flags[2] = {0, 0};
    QV_CUDA_CHECK(cudaMemcpyAsync(flags, overflow.get(), sizeof flags, cudaMemcpyDeviceToHost, s0));
    QV_CUDA_CHECK(cudaStreamSynchronize(s0));
    if (flags[0] != 0 || flags[1] != 0)
      fail(Status::invalid_argument, "mode fp16: ", flags[0] != 0 ? "base" : "query",
           " values beyond the half-precision range (magnitude above 65504); use bf16, tf32 or fp32");
  };
  if (half) {
    depth = half_row_stride(dim);
    query_half = PoolBuffer<uint16_t>(pool, nq * depth);
    overflow = PoolBuffer<int>(pool, 2);
    QV_CUDA_CHECK(cudaMemsetAsync(overflow.get(), 0, 2 * sizeof(int), s0));
    launch_to_half(x, nq, dim, mode, query_half.get(), overflow.get() + 1, s0);
    if (!streamed) {
      base_half = PoolBuffer<uint16_t>(pool, n * depth);
      launch_to_half(y, n, dim, mode, base_half.get(), overflow.get(), s0);
      check_overflow();
      gemm_y = base_half.get();
    }
    gemm_x = query_half.get();
  }

  // ---- buffers of the search ----
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
  // Streaming: two chunks (floats, norms, half copies); the fast modes' re-rank later gathers the
  // candidates' rows on the host into chunk 0, gather_queries queries at a time, with their
  // positions in gather_rows.
  PoolBuffer<float> chunk_floats[2], chunk_norms[2];
  PoolBuffer<uint16_t> chunk_half[2];
  PoolBuffer<int32_t> gather_rows;
  const int64_t gather_queries = std::max<int64_t>(1, chunk_rows / kc);  // streamed: chunk_rows >= kc
  if (streamed) {
    for (int b = 0; b < 2; ++b) {
      chunk_floats[b] = PoolBuffer<float>(pool, chunk_rows * dim);
      if (l2 && !norms_on_device) chunk_norms[b] = PoolBuffer<float>(pool, chunk_rows);
      if (half) chunk_half[b] = PoolBuffer<uint16_t>(pool, chunk_rows * depth);
    }
    if (fast) gather_rows = PoolBuffer<int32_t>(pool, gather_queries * kc);
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
  // GEMM + selection of one tile: queries [q0, q0 + rows) against base rows [c0, c0 + cols), whose
  // GEMM operand starts at tile_y and whose norms (L2) at bias. Returns the stream it ran on.
  auto search_tile = [&](int64_t q0, int64_t rows, int64_t c0, int64_t cols, const void* tile_y,
                         const float* bias) {
    const int64_t ld = round_up(cols, 4);
    const int slot = static_cast<int>(step & 1);
    cudaStream_t stream = resources.stream(slot);
    float* tile = tiles[slot].get();
    // The tile buffer is free: the selection that last read it ran on this same stream.
    distance_gemm(resources.blas(slot), mode, cols, rows, depth, alpha, tile_y, depth,
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
    request.column_bias = bias;
    request.id_base = c0;
    request.prev_keys = c0 > 0 ? best_keys.get() + q0 * kc : nullptr;
    request.prev_ids = c0 > 0 ? best_rows.get() + q0 * kc : nullptr;
    request.filter = filter.bits != nullptr ? filter_copy.get() : nullptr;
    request.filter_bits = filter.nbits;
    request.out_keys = best_keys.get() + q0 * kc;
    request.out_ids = best_rows.get() + q0 * kc;
    request.keep_missing_as_sentinel = true;
    select_rows(request, resources.limits(), workspace.get(), stream);
    QV_CUDA_CHECK(cudaEventRecord(resources.event(kChainEvent), stream));
    ++step;
    return stream;
  };

  // Streamed fast modes: the candidates' exact keys from the host base. The candidate rows come to
  // the host, their vectors are gathered there and copied into chunk 0 (free once the search is
  // done: `stream` follows the last selection), and the same re-rank kernel reads them there.
  std::vector<int32_t> candidates, positions;
  std::vector<float> gathered;
  auto rerank_from_host = [&](int64_t q0, int64_t rows, cudaStream_t stream) {
    constexpr int32_t kNone = std::numeric_limits<int32_t>::max();  // the selection's "no row"
    candidates.resize(size_t(rows * kc));
    copy_from_device(staging, device, candidates.data(), best_rows.get() + q0 * kc,
                     candidates.size() * sizeof(int32_t), stream);
    positions.resize(size_t(gather_queries * kc));
    gathered.resize(size_t(gather_queries * kc * dim));
    for (int64_t g0 = 0; g0 < rows; g0 += gather_queries) {
      const int64_t count = std::min(gather_queries, rows - g0) * kc;
      for (int64_t i = 0; i < count; ++i) {
        const int32_t row = candidates[size_t(g0 * kc + i)];
        positions[size_t(i)] = row == kNone ? kNone : int32_t(i);
        if (row != kNone)
          std::copy(base + int64_t(row) * dim, base + (int64_t(row) + 1) * dim, gathered.data() + i * dim);
      }
      copy_to_device(staging, device, gather_rows.get(), positions.data(), size_t(count) * sizeof(int32_t), stream);
      copy_to_device(staging, device, chunk_floats[0].get(), gathered.data(), size_t(count * dim) * sizeof(float),
                     stream);
      launch_rerank(chunk_floats[0].get(), x + (q0 + g0) * dim, dim, gather_rows.get(), count / kc, kc, l2,
                    rerank_keys.get() + (q0 + g0) * kc, stream);
    }
  };

  int64_t pending = -1;  // query tile whose results still go to the host
  int64_t pending_rows = 0;
  // The end of query tile t (its selections done, on `stream`): finalize, or re-rank then finalize;
  // then the previous tile's results go to the host.
  auto finish_query_tile = [&](int64_t q0, int64_t rows, int64_t t, cudaStream_t stream) {
    if (!fast) {
      launch_finalize(best_keys.get() + q0 * k, best_rows.get() + q0 * k, rows, k,
                      l2 ? query_norms.get() + q0 : nullptr, l2, result_d + q0 * k, result_i + q0 * k, stream);
    } else {
      // The candidates' exact distances, the k best of them (ties to the smaller row), the finalize.
      if (streamed) {
        rerank_from_host(q0, rows, stream);
      } else {
        launch_rerank(y, x + q0 * dim, dim, best_rows.get() + q0 * kc, rows, kc, l2, rerank_keys.get() + q0 * kc,
                      stream);
      }
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
  };

  if (!streamed) {
    for (int64_t q0 = 0, t = 0; q0 < nq; q0 += plan.query_rows, ++t) {
      const int64_t rows = std::min(plan.query_rows, nq - q0);
      cudaStream_t stream = nullptr;
      for (int64_t c0 = 0; c0 < n; c0 += plan.columns) {
        stream = search_tile(q0, rows, c0, std::min(plan.columns, n - c0),
                             static_cast<const char*>(gemm_y) + size_t(c0 * depth) * gemm_value_bytes,
                             l2 ? y_norms + c0 : nullptr);
      }
      finish_query_tile(q0, rows, t, stream);
    }
  } else {
    // Chunk i + 1 is copied on the copy stream (through the pinned staging for pageable memory)
    // while chunk i is searched: every query tile against the chunk's base tiles, each query
    // tile's selection continuing from its running best as across base tiles above.
    const int64_t chunks = (n + chunk_rows - 1) / chunk_rows;
    auto upload = [&](int64_t chunk) {
      const int b = static_cast<int>(chunk & 1);
      const int64_t r0 = chunk * chunk_rows;
      const int64_t count = std::min(chunk_rows, n - r0);
      // The buffer's previous chunk (chunk - 2) is searched.
      if (chunk >= 2) QV_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, resources.event(kChunkFreeEvent + b), 0));
      copy_to_device(staging, device, chunk_floats[b].get(), base + r0 * dim, size_t(count * dim) * sizeof(float),
                     copy_stream);
      if (l2 && base_norms != nullptr && !norms_on_device)
        copy_to_device(staging, device, chunk_norms[b].get(), base_norms + r0, size_t(count) * sizeof(float),
                       copy_stream);
      QV_CUDA_CHECK(cudaEventRecord(resources.event(kChunkCopiedEvent + b), copy_stream));
    };
    upload(0);
    cudaStream_t stream = s0;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const int b = static_cast<int>(chunk & 1);
      const int64_t r0 = chunk * chunk_rows;
      const int64_t count = std::min(chunk_rows, n - r0);
      // The chunk's norms and half copy on stream 0, then stream 1 may start on it.
      QV_CUDA_CHECK(cudaStreamWaitEvent(s0, resources.event(kChunkCopiedEvent + b), 0));
      const float* chunk_y = chunk_floats[b].get();
      const float* bias = nullptr;
      if (l2) {
        if (norms_on_device) {
          bias = base_norms + r0;
        } else {
          if (base_norms == nullptr) launch_row_norms(chunk_y, count, dim, chunk_norms[b].get(), s0);
          bias = chunk_norms[b].get();
        }
      }
      const void* chunk_gemm_y = chunk_y;
      if (half) {
        launch_to_half(chunk_y, count, dim, mode, chunk_half[b].get(), overflow.get(), s0);
        chunk_gemm_y = chunk_half[b].get();
      }
      QV_CUDA_CHECK(cudaEventRecord(resources.event(kChunkReadyEvent), s0));
      QV_CUDA_CHECK(cudaStreamWaitEvent(resources.stream(1), resources.event(kChunkReadyEvent), 0));
      for (int64_t q0 = 0; q0 < nq; q0 += plan.query_rows) {
        const int64_t rows = std::min(plan.query_rows, nq - q0);
        for (int64_t c = 0; c < count; c += plan.columns) {
          stream = search_tile(q0, rows, r0 + c, std::min(plan.columns, count - c),
                               static_cast<const char*>(chunk_gemm_y) + size_t(c * depth) * gemm_value_bytes,
                               bias != nullptr ? bias + c : nullptr);
        }
      }
      // Every GEMM of the chunk precedes its selection, and the selections are chained: after the
      // last one, the chunk's buffers are free.
      QV_CUDA_CHECK(cudaEventRecord(resources.event(kChunkFreeEvent + b), stream));
      if (chunk + 1 < chunks) upload(chunk + 1);
    }
    if (half) check_overflow();
    for (int64_t q0 = 0, t = 0; q0 < nq; q0 += plan.query_rows, ++t)
      finish_query_tile(q0, std::min(plan.query_rows, nq - q0), t, stream);
  }
  if (pending >= 0) download(pending, pending_rows, int(((nq - 1) / plan.query_rows) & 1));
  session.finish();
}

}  // namespace quiver::gpu
