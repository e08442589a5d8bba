// Exact k-NN on the GPU (gpu.h's knn): the paper's §5.1, with a certified float32 mode.
//
// A pass ranks rows tile by tile: a tile holds a key for a block of queries against a block of base
// rows, and the selection kernel reads each tile once and continues from the running kc best of the
// query block, so no tile is written twice and the partial results never leave the device.
// Consecutive tiles alternate between two streams and two buffers: the tile of one step is computed
// while the previous one is selected. Per query tile, after its last base tile: the re-rank (the kc
// candidates' exact float32 distances, exact_distances.h), a selection of the k best of them, and
// the finalize (64-bit ids, distances in the metric's units). Results meant for host memory go back
// on the copy stream while the next query tile computes.
//
// Tile kinds: a GEMM (cuBLAS SGEMM, TF32, or FP16 / BF16 on half copies made at the start) giving
// alpha <x, y> (alpha = -2 for L2, whose selection adds ||y||^2, -1 for similarities), or the direct
// tile of exact distances (exact_distances.h), which needs no re-rank (kc = k).
//
// The modes: tf32 / fp16 / bf16 are one GEMM pass with knn_candidate_count(k) candidates. fp32 is
// certified (certify.h): a TF32 pass (SGEMM for fewer than kMinTf32Queries queries, where it costs
// the same) whose result a per-query certificate proves equal to the exact one; the queries it
// cannot prove go through an SGEMM pass with the same certificate (tighter bound), and those still
// unproven through the direct pass, which ranks every row by its exact distance. k above
// kMaxCertifiedK leaves no room for candidates beyond k: the direct pass answers every query.
//
// L2 data far from the origin (every row near some offset) makes |x| |y|, and with it the
// certificate's bound, large next to the gaps between neighbours: the TF32 and SGEMM passes then
// multiply rows less a centre m near the base's mean (centring.h; chosen per call from a sample of
// the base, only where it shrinks the bound), a centred copy of an unstreamed base made once per
// call, a streamed base's chunks centred as they arrive. The re-rank reads the original rows.
//
// The TF32 pass (dim a multiple of 4 up to 128, kc <= 32, kMinFusedQueries or more, 16384 rows or more,
// or as many a chunk) is one kernel instead (tf32_select.h): tensor-core products selected where
// they are computed, each block's splits of the base giving kc candidates per query that one
// selection merges into the running best. Over a base in chunks (below) each chunk is one launch
// whose lists start at the running kc-th best, so a chunk costs no more than its rows; a resident
// base is searched in two such parts (kBoundingPart), the first starting from the kc-th best of a
// sample of rows searched by one GEMM tile (kSampleRows). No other distance tile is written; the
// re-rank and the certificate follow as above. A certified pass of more candidates takes it too, each split
// (at least 4 kc / 32 of them) giving only its best 32: a row a full split dropped
// may be closer than the selection's last, so the certificate bounds the rows left out by the
// smallest last key of the full splits as well (certify.h's launch_split_bounds); queries whose
// neighbours crowd into one split (data stored in clusters) then fail it and go to the SGEMM pass,
// still exact.
//
// The SGEMM pass of a small batch (up to kGemvSelectMaxQueries queries, kc <= kGemvSelectMaxK) over
// a base on the device is one kernel pair instead (gemv_select.h): a GEMV whose blocks keep their
// best candidates as they read the base, and a merge of the blocks' lists into the kc best. No 1M-key
// row is written and selected; its keys are the SGEMM's up to summation order, which the
// certificate's bound covers, so the re-rank and the certificate follow unchanged.
//
// Half the bytes, certified alike (the certificate bounds the inputs' rounding by their residual
// norms, as for TF32): an index's small batches read the 16-bit copy of its rows that its DeviceMatrix
// keeps (half_rows.h), and a certified pass whose rows the fused kernel does not take (more than 128
// values) multiplies IEEE half tiles instead of TF32 ones (half_tiles_take). The float pass answers
// the queries either leaves.
//
// A base in host memory larger than the streaming budget (ResourcesOptions::stream_bytes) is not
// copied whole: each pass streams it through two device chunk buffers, chunk i + 1 copied on the
// copy stream while chunk i is searched (every query tile against the chunk's base tiles, each query
// tile's selection continuing from its running best exactly as across base tiles). A chunk is a
// whole number of the first pass's base tiles, so that pass runs the GEMMs and selections of the
// unstreamed search and the fast modes' results are identical (fp16 aside: it streams through
// float tiles, below; the fused pass keeps the same candidates whatever the chunks); the fp32
// mode's are exact either way. Each chunk's norms are computed on the
// device (or copied from base_norms), its half copy made
// there, its certificate statistics gathered. Re-ranks of a streamed base read the candidates' rows
// from host memory: they are gathered on the host (copy threads) into chunk 0, where the same re-rank
// kernel reads them (bit-identical keys); fp16's range check then happens after the search, still
// before any output is written.
//
// A base in host memory within the budget is copied to the device whole, but the first pass does
// not wait for the copy (Shared::arriving): it searches the base in chunks as they land in the copy,
// the same way (the fused kernel once per chunk), so that only the last chunk's copy is not hidden
// behind the search. After it, the base is resident for the re-rank and the later passes. Large
// host queries on a tiled search of a resident base arrive the same way, a query tile at a time
// (kArrivingQueryBytes).
//
// The code follows a pass in stages (run_pass, over one Pass): upload the queries, choose the GEMM's
// operands (half copies), allocate the certificate's statistics, plan the tiles (or the fused kernel)
// and start the queries that waited for the plan, allocate the search's and the results' buffers,
// start the streams; then search a base on the device (search_resident, arriving query tiles through
// arrive_query_tile) or in chunks (search_chunked: upload_chunk, stage_chunk, search_chunk), each
// query tile ending in finish_query_tile; then deliver_results. knn runs the passes: the first over
// every query, then the SGEMM and direct passes (run_subset) over the queries still unproven.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/flat/centring.h"
#include "cuda/flat/certify.h"
#include "cuda/flat/compute_modes.h"
#include "cuda/flat/device_matrix.h"
#include "cuda/flat/exact_distances.h"
#include "cuda/flat/gemv_select.h"
#include "cuda/flat/half_rows.h"
#include "cuda/flat/kernels.h"
#include "cuda/flat/knn_passes.h"
#include "cuda/flat/tf32_select.h"
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
// Host results up to this size (with the certificate's flags) are copied back at once.
constexpr int64_t kPackedResultBytes = int64_t(1) << 16;
// fp32 mode: from this many queries on, the TF32 pass (8x the SGEMM rate) pays for its extra read of
// the base (the residual statistics); below, an SGEMM pass reads the base about as fast.
constexpr int64_t kMinTf32Queries = 32;
// The TF32 pass runs as one kernel (tf32_select.h) from this many queries on; below, the cuBLAS
// tiles are faster. Since its bounds start from a sample tile, that holds from small batches on
// (H200, 1M x 128, 100 queries: 0.39 ms against 0.58 ms host to host).
constexpr int64_t kMinFusedQueries = 64;
// It writes no distance tiles, so its query tiles are as large as this allows: fewer, longer splits
// of the base, over which each block's start (its queries' load, its lists filling) is amortised.
constexpr int64_t kFusedQueryRows = 16384;
// Except where its host results are large (a resident base): those of a query tile come back while
// the next tile computes, and a tile holds at most this many bytes of them (at least
// kMinFusedResultRows queries).
// k = 1024: 10 000 queries' 123 MB came back in one piece after everything else (6.3 ms of the 46.7
// host to host, H200).
constexpr int64_t kFusedResultTileBytes = int64_t(32) << 20;
constexpr int64_t kMinFusedResultRows = 1024;
// ... and from this many base rows on. Each query's list of kc candidates fills as the rows go by:
// over a short base most rows enter it (about kc ln(n / kc) of n), and the kernel's list upkeep costs
// more than the tiles' write and read (H100, 1M queries against 1024 rows, k = 1: 14.4 ms fused).
constexpr int64_t kMinFusedRows = 16384;
// A certified pass of more than kTf32SelectMaxK candidates (k above 16) draws them from split lists
// of kTf32SelectMaxK (truncated), at least kTruncatedSplitsPerList * kc / 32 splits: a query's
// candidates, spread over them (rows in random order), fill about a quarter of each split's list, whose
// last key then lies well past the selection's last; where they crowd into a split the certificate
// fails and the SGEMM pass answers. Against cuBLAS tiles (H200, 1M x 128, 10 000 queries, host to
// host): k = 100 30.7 -> 27.6 ms, k = 1024 79.3 -> 69.9 ms (bench/gpu/NOTES.md, version 27).
constexpr int64_t kTruncatedSplitsPerList = 4;
// A resident base is searched by the fused pass in two parts: its first 1 / kBoundingPart of rows,
// then the rest, each query's lists starting at its kc-th best of the first part (launch_tf32_select's
// bounds). Lists that start empty fill from every row that beats them; these admit only rows below a
// bound already near the end result. H200, k = 10 / 100 / 1024: 19.8 / 27.6 / 69.9 ->
// 17.8 / 26.2 / 64.3 ms (a part of 1 / 16: 18.9 / 26.3 / 62.7; 1 / 32: 19.2 / 26.7 / 69.3).
constexpr int64_t kBoundingPart = 8;
// ... and the bounding part's lists start from a bound themselves: the kc-th best of the base's first
// kSampleRows rows, searched by one cuBLAS tile and its selection. A list that starts empty fills
// from kc (1 + ln(rows / kc)) offers, merged kPending at a time, while the tensor cores wait: most of
// the bounding part's time, and all of a small batch's (one query tile over ~120 splits of a few
// thousand rows). The selection reads each key of the tile once.
constexpr int64_t kSampleRows = 8192;
// Up to this many candidates: a selection of more from the sample's rows costs more than it saves.
constexpr int64_t kSampleMaxCandidates = 256;

// Host queries of at least this many bytes arrive in kArrivingQueryTiles query tiles on a tiled
// search of a resident base: each tile's copy (HostStaging's, on the copy stream) overlaps the tiles
// before it on the device. Fashion-MNIST's 31 MB took 1.2 ms before its first GEMM.
constexpr int64_t kArrivingQueryBytes = int64_t(8) << 20;
constexpr int64_t kArrivingQueryTiles = 4;

// The indices of Resources' events; Pass's accessors (chain_event() ...) name them by use.
constexpr int kChainEvent = 0;    // after the latest selection or finalize
constexpr int kTileDoneEvent = 1;  // and 2: a query tile's results are final (alternating)
constexpr int kInputsEvent = 3;   // inputs uploaded and norms computed (on stream 0)
constexpr int kChunkCopiedEvent = 4;  // and 5: a chunk is on the device (copy stream)
constexpr int kQueryTileEvent = 4;    // resident passes: an arriving query tile is ready (copy stream)
constexpr int kChunkFreeEvent = 6;    // and 7: a chunk's search is done
constexpr int kChunkReadyEvent = 8;   // the current chunk's norms and half copy (stream 0)
constexpr int kStatsEvent = 8;        // resident: the certificate's statistics (stream 1)
static_assert(kChunkReadyEvent < Resources::kEvents, "Resources::kEvents");
static_assert(certified_candidate_count(kMaxCertifiedK) <= kMaxSelectK &&
                  certified_candidate_count(kMaxCertifiedK + 1) > kMaxSelectK,
              "kMaxCertifiedK: the largest k whose candidates fit the selection");

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

struct TilePlan {
  int64_t query_rows;  // queries per tile
  int64_t columns;     // base rows per tile (a multiple of kColumnAlign unless it covers all)
};

// Tiles of at most tile_floats entries: wide enough for the selection, then as many queries as fit,
// at most max_query_rows; if those fit, the leftover widens the tile. Query tiles are balanced.
TilePlan plan_tiles(int64_t tile_floats, int64_t nq, int64_t n, int64_t k, int64_t max_query_rows) {
  const int64_t all_columns = std::min(round_up(n, 4), kMaxTileColumns);
  int64_t columns = std::min(all_columns, round_up(std::max(kMinTileColumns, kColumnsPerK * k), kColumnAlign));
  int64_t query_rows = std::max<int64_t>(1, tile_floats / columns);
  if (query_rows >= max_query_rows) {
    query_rows = max_query_rows;
    columns = std::min(all_columns, std::max(columns, tile_floats / query_rows / kColumnAlign * kColumnAlign));
  }
  // Balanced column tiles: a short last one would leave its selection alone at the end, where a tile's
  // GEMM no longer overlaps the selection before it.
  const int64_t column_tiles = (all_columns + columns - 1) / columns;
  columns = std::min(columns, round_up((all_columns + column_tiles - 1) / column_tiles, kColumnAlign));
  const int64_t query_tiles = (nq + query_rows - 1) / query_rows;
  query_rows = (nq + query_tiles - 1) / query_tiles;
  return {query_rows, columns};
}

// The fused TF32 pass's query tiles: balanced, at most max_rows queries (columns: the base).
TilePlan plan_fused(int64_t nq, int64_t n, int64_t max_rows) {
  const int64_t query_tiles = (nq + max_rows - 1) / max_rows;
  return {(nq + query_tiles - 1) / query_tiles, n};
}

enum class TileKind { sgemm, tf32, fp16, bf16, direct };

TileKind tile_kind(ComputeMode mode) {
  switch (mode) {
    case ComputeMode::fp32: return TileKind::sgemm;
    case ComputeMode::tf32: return TileKind::tf32;
    case ComputeMode::fp16: return TileKind::fp16;
    case ComputeMode::bf16: return TileKind::bf16;
  }
  return TileKind::sgemm;
}

ComputeMode gemm_mode(TileKind kind) {
  switch (kind) {
    case TileKind::tf32: return ComputeMode::tf32;
    case TileKind::fp16: return ComputeMode::fp16;
    case TileKind::bf16: return ComputeMode::bf16;
    default: return ComputeMode::fp32;
  }
}

thread_local KnnPassCounts pass_counts;
std::atomic<bool> gemv_select_on{true};
std::atomic<bool> half_rows_on{true};
std::atomic<int64_t> min_tf32_queries{kMinTf32Queries};
std::atomic<int64_t> min_fused_queries{kMinFusedQueries};
std::atomic<int64_t> fused_result_tile_bytes{kFusedResultTileBytes};
std::atomic<bool> fp16_certified_on{true};

bool is_half(TileKind kind) { return kind == TileKind::fp16 || kind == TileKind::bf16; }

struct PassSpec {
  TileKind kind = TileKind::sgemm;
  int64_t kc = 0;         // candidates per query (k for the direct tile)
  bool certify = false;   // write per-query certificate flags (certify.h)
  bool centred = false;   // the GEMM multiplies the centred rows (centring.h; Shared::centre)
  bool half_rows = false;  // the GEMV pass reads Shared::half_rows
  CertifyModel model;
};

// What the passes of one knn call share: the inputs, the base on the device (unless streamed) with
// its norms (L2), the filter.
struct Shared {
  Resources* resources = nullptr;
  bool l2 = true;
  const float* base = nullptr;
  const float* base_norms = nullptr;
  int64_t n = 0, dim = 0;
  RowFilter filter;
  MemoryKind base_kind = MemoryKind::host_pageable;
  bool norms_on_device = false;
  bool streamed = false;
  // Not streamed, from host memory: the base's device copy (base_copy, with norms_copy) fills chunk
  // by chunk while the first pass searches it; resident after that pass.
  bool arriving = false;
  int64_t chunk_rows = 0;  // base rows per streamed or arriving chunk
  int64_t chunks_searched = 0;  // by the first pass, when it searched the base in chunks
  int64_t gemv_queries = 0;     // searched by the GEMV pass (gemv_select.h), over all passes
  int64_t fused_queries = 0;    // searched by the fused TF32 kernel (tf32_select.h), over all passes
  int64_t arriving_query_tiles = 0;  // by the first pass, when its host queries arrived tile by tile
  const float* y = nullptr;        // the base on the device (not streamed)
  const float* y_norms = nullptr;  // its squared norms (L2, not streamed)
  PoolBuffer<float> base_copy, norms_copy;
  PoolBuffer<uint8_t> filter_copy;
  // Centring (centring.h), where centre_base chose it: m, and (not streamed) the centred base and
  // its squared norms; a streamed base's chunks are centred as they arrive.
  bool centred = false;
  PoolBuffer<float> centre, centred_base, centred_norms;
  // The certificate's statistics of the base's rows, kept with an index's DeviceMatrix, or nullptr.
  const unsigned* kept_base_stats = nullptr;
  // An index's 16-bit rows with their statistics (half_rows.h; rows null: none).
  HalfRows half_rows;
};

// Host bytes to dst: host memory by memcpy, device memory (one output of two may be) by the runtime.
void put_from_host(int device, void* dst, const void* src, size_t bytes) {
  const MemoryKind kind = memory_kind(dst, device);
  if (kind == MemoryKind::host_pageable || kind == MemoryKind::host_pinned) {
    std::memcpy(dst, src, bytes);
  } else {
    QV_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
  }
}

void sync_streams(Resources& resources) {
  for (int i = 0; i < Resources::kStreams; ++i) QV_CUDA_CHECK(cudaStreamSynchronize(resources.stream(i)));
}

// Decides streaming (chunks of whole tiles of `columns` base rows) and puts the base, its norms and
// the filter on the device (stream 0).
void prepare(Shared& sh, int64_t columns, bool half) {
  Resources& resources = *sh.resources;
  const int device = resources.device();
  DevicePool& pool = resources.pool();
  HostStaging& staging = resources.staging();
  cudaStream_t s0 = resources.stream(0);
  const int64_t n = sh.n, dim = sh.dim;
  sh.base_kind = memory_kind(sh.base, device);
  sh.norms_on_device = sh.base_norms != nullptr && memory_kind(sh.base_norms, device) == MemoryKind::device;
  sh.chunk_rows = n;
  if (sh.base_kind == MemoryKind::host_pageable || sh.base_kind == MemoryKind::host_pinned) {
    int64_t budget = resources.stream_bytes();
    if (budget == 0) {
      size_t free_bytes = 0, total_bytes = 0;
      QV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      budget = int64_t(free_bytes / 4);
    }
    if (n * dim * int64_t(sizeof(float)) > budget) {
      // Two chunks of rows, each row with its floats, its half copy and its norm.
      const int64_t row_bytes =
          2 * (dim * int64_t(sizeof(float)) + (half ? half_row_stride(dim) * 2 : 0) + (sh.l2 ? 4 : 0));
      sh.chunk_rows = std::max<int64_t>(1, budget / row_bytes / columns) * columns;
      if (sh.chunk_rows >= n) sh.chunk_rows = n;
    }
  }
  sh.streamed = sh.chunk_rows < n;
  if (!sh.streamed) {
    sh.y = sh.base;
    if (sh.base_kind != MemoryKind::device) {
      sh.base_copy = PoolBuffer<float>(pool, n * dim);
      sh.y = sh.base_copy.get();
      // Host rows in several chunks arrive as the first pass goes; one chunk, a base whose half copy
      // the pass makes at its start, or another device's memory, is copied first.
      const int64_t arriving_rows = round_up(
          std::max<int64_t>(1, resources.upload_chunk_bytes() / (dim * int64_t(sizeof(float)))), kColumnAlign);
      sh.arriving = !half && arriving_rows < n && sh.base_kind != MemoryKind::other_device;
      if (sh.arriving) {
        sh.chunk_rows = arriving_rows;
      } else {
        copy_to_device(staging, device, sh.base_copy.get(), sh.base, size_t(n * dim) * sizeof(float), s0);
      }
    }
    if (sh.l2) {
      if (sh.norms_on_device) {
        sh.y_norms = sh.base_norms;
      } else {
        sh.norms_copy = PoolBuffer<float>(pool, n);
        if (!sh.arriving) {  // an arriving base's norms come with each chunk
          if (sh.base_norms != nullptr) {
            copy_to_device(staging, device, sh.norms_copy.get(), sh.base_norms, size_t(n) * sizeof(float), s0);
          } else {
            launch_row_norms(sh.y, n, dim, sh.norms_copy.get(), s0);
          }
        }
        sh.y_norms = sh.norms_copy.get();
      }
    }
  }
  if (sh.filter.bits != nullptr) {
    const int64_t bytes = std::max<int64_t>(1, (sh.filter.nbits + 7) / 8);
    sh.filter_copy = PoolBuffer<uint8_t>(pool, bytes);
    if (sh.filter.nbits > 0) copy_to_device(staging, device, sh.filter_copy.get(), sh.filter.bits, size_t(bytes), s0);
  }
}

// Chooses centring for the fp32 mode's L2 passes (centring.h) from a sample of the base (after
// prepare); makes the centred copy of an unstreamed base. Out of device memory for the copy: the
// passes run uncentred (slower where the data is far from the origin, the same results).
void centre_base(Shared& sh) {
  Resources& resources = *sh.resources;
  DevicePool& pool = resources.pool();
  cudaStream_t s0 = resources.stream(0);
  const int64_t n = sh.n, dim = sh.dim;
  const int64_t samples = std::min(n, kCentreSampleRows);
  std::vector<double> sums;
  if (sh.streamed || sh.arriving) {
    sums = sample_sums_host(sh.base, n, dim, samples);
  } else {
    PoolBuffer<double> workspace(pool, sample_sums_workspace(dim));
    sums = sample_sums_device(sh.y, n, dim, samples, workspace.get(), s0);
  }
  const std::vector<float> centre = choose_centre(sums, dim, samples);
  if (centre.empty()) return;
  try {
    sh.centre = PoolBuffer<float>(pool, dim);
    if (!sh.streamed) {
      sh.centred_base = PoolBuffer<float>(pool, n * dim);
      sh.centred_norms = PoolBuffer<float>(pool, n);
    }
  } catch (const Error& e) {
    if (e.status() != Status::out_of_device_memory) throw;
    sh.centre.reset();
    sh.centred_base.reset();
    return;
  }
  copy_to_device(resources.staging(), resources.device(), sh.centre.get(), centre.data(),
                 size_t(dim) * sizeof(float), s0);
  if (!sh.streamed && !sh.arriving) {  // an arriving base's chunks are centred as they arrive
    launch_centre(sh.y, n, dim, sh.centre.get(), sh.centred_base.get(), s0);
    launch_row_norms(sh.centred_base.get(), n, dim, sh.centred_norms.get(), s0);
  }
  sh.centred = true;
}

// One pass's state, shared by run_pass's stages: its inputs, what the stages derive from them, and
// the device buffers, declared in the order they are allocated (so they return to the pool in the
// reverse order).
struct Pass {
  Pass(Shared& shared, const float* query_data, int64_t query_count, int64_t result_k, const PassSpec& pass_spec,
       float* distances_out, int64_t* ids_out, std::vector<uint8_t>* flags_out);

  // The stages, in the order run_pass calls them.
  void upload_queries();
  void choose_gemm_operands();
  void allocate_certificate();
  void plan_search();
  void start_queries();
  void allocate_search();
  void allocate_results();
  void start_streams();
  void search_resident();
  void search_chunked();
  void deliver_results();

  // Their steps.
  void check_overflow();
  void gather_base_stats(const float* rows, const float* norms, int64_t count, cudaStream_t stream);
  cudaStream_t search_tile(int64_t q0, int64_t rows, int64_t c0, int64_t cols, const void* tile_y, const float* bias,
                           int slot = -1);
  cudaStream_t search_fused(int64_t q0, int64_t rows, const float* part, const float* part_norms, int64_t first_row,
                            int64_t count);
  void search_gemv();
  void upload_query_rows(int64_t q0, int64_t rows);
  void arrive_query_tile(int64_t q0, int64_t rows);
  // Whether the GEMV pass gathers the base's statistics too (from the norms the L2 keys read).
  bool gemv_base_stats() const { return gemv && spec.certify && !stats_read_rows; }
  void upload_chunk(int64_t chunk);
  struct ChunkOperands {
    const void* gemm_y = nullptr;  // the chunk's tile operand (floats or half copy)
    const float* bias = nullptr;   // its norms (L2 GEMM tiles), else null
  };
  ChunkOperands stage_chunk(int64_t chunk);
  cudaStream_t search_chunk(int64_t chunk, cudaStream_t stream);
  void rerank_from_host(int64_t q0, int64_t rows, cudaStream_t stream);
  void rerank_query_tile(int64_t q0, int64_t rows, cudaStream_t stream);
  void finish_query_tile(int64_t q0, int64_t rows, int64_t t, cudaStream_t stream);
  void download(int64_t q0, int64_t rows, int tile_parity);

  // The resources' events, by what they mark (the k...Event indices above).
  cudaEvent_t chain_event() const { return resources.event(kChainEvent); }
  cudaEvent_t tile_done_event(int parity) const { return resources.event(kTileDoneEvent + parity); }
  cudaEvent_t inputs_event() const { return resources.event(kInputsEvent); }
  cudaEvent_t chunk_copied_event(int b) const { return resources.event(kChunkCopiedEvent + b); }
  cudaEvent_t chunk_free_event(int b) const { return resources.event(kChunkFreeEvent + b); }
  cudaEvent_t chunk_ready_event() const { return resources.event(kChunkReadyEvent); }
  cudaEvent_t stats_event() const { return resources.event(kStatsEvent); }
  cudaEvent_t query_tile_event() const { return resources.event(kQueryTileEvent); }

  // ---- the inputs and what follows from them ----
  Shared& sh;
  Resources& resources;
  const int device;
  DevicePool& pool;
  HostStaging& staging;
  const cudaStream_t s0;
  const cudaStream_t copy_stream;
  const PassSpec& spec;
  const float* const queries;
  const int64_t nq, k;
  float* const distances;
  int64_t* const ids;
  std::vector<uint8_t>* const flags;
  const bool l2;
  const int64_t n, dim;
  const float* const base;
  const float* const base_norms;
  const bool direct;
  const bool half;
  const ComputeMode mode;
  const int64_t kc;
  const bool streamed;
  const bool arriving;
  const bool chunked;  // streamed or arriving: the base is searched chunk by chunk
  int64_t chunk_rows;  // (plan_search makes an arriving base's chunks whole tiles of a tiled search)
  const bool norms_on_device;
  const float* const y;
  const float* const y_norms;
  const bool outputs_on_device;
  const bool centred;
  // 16-bit distance tiles (bf16, and fp16 on an unstreamed base): the GEMM writes its tile in the
  // inputs' type and the selection reads it: half the bytes of a float tile each way. The candidates
  // are re-ranked exactly as with float tiles. fp16 tiles hold alpha * tile_scale * <x, y>, the power
  // of two tile_scale keeping every entry within half's range (fp16_tile_scale, from the largest
  // magnitudes of the base and queries); a streamed base's are not known before its first tile, so
  // fp16 streams through float tiles (its candidates may then differ from the unstreamed search's).
  const bool key16;
  // How the GEMM rounds its inputs, for the certificate's residual norms: a certified fp16 pass (see
  // knn_search) rounds them to half, the TF32 pass to TF32.
  const InputRounding rounding;
  const float alpha;
  const size_t gemm_value_bytes;
  // L2 on exact float inputs needs only max ||y||^2, which the norms give without reading the rows.
  const bool stats_read_rows;
  const float norms_scale;
  // A 16-bit tile's rows start 16-byte aligned (ld a multiple of 8); it takes half the floats.
  const int64_t tile_align;
  // (The caller's norms are of the original rows: a centred chunk's are computed.)
  const bool chunk_needs_norms;
  const int64_t gather_queries;  // streamed re-rank: queries whose candidates chunk 0 holds at once

  // ---- upload_queries ----
  // Centred passes: the GEMMs, the TF32 kernel and the certificate's statistics read the centred
  // rows (xc, yc, yc_norms; a streamed base's chunks are centred in place); the re-rank and the
  // direct tiles the original ones (x, y).
  PoolBuffer<float> query_copy;
  bool queries_deferred = false;  // host queries large enough to arrive tile by tile, not yet copied
  bool queries_arriving = false;  // they do: plan_search chose a tiled search of a resident base
  const float* x = nullptr;
  PoolBuffer<float> query_centred;
  const float* xc = nullptr;
  const float* yc = nullptr;
  const float* yc_norms = nullptr;
  // ---- choose_gemm_operands: the floats, or their half copies (rows padded to half_row_stride) ----
  const void* gemm_y = nullptr;
  const void* gemm_x = nullptr;
  int64_t depth = 0;
  PoolBuffer<uint16_t> base_half, query_half;
  PoolBuffer<int> overflow;  // base, queries; then (16-bit tiles, fp16) their largest magnitudes' bits
  float tile_scale = 1.f;
  int flags_h[4] = {0, 0, 0, 0};  // check_overflow's host copy of overflow
  // ---- allocate_certificate: the certificate's statistics (certify.h) ----
  PoolBuffer<double> query_stats;
  PoolBuffer<unsigned> base_stats;
  PoolBuffer<uint8_t> flags_device;
  // ---- plan_search ----
  bool gemv = false;  // the GEMV pass of a small batch (gemv_select.h), gemv_blocks lists a query
  int64_t gemv_blocks = 0;
  bool fused = false;
  int64_t split_kc = 0;  // fused: candidates each split keeps (kc, or fewer: truncated)
  TilePlan plan{};
  int64_t min_splits = 1;
  int64_t bounding_rows = 0;  // fused, resident: rows of the part searched first (kBoundingPart)
  int64_t sample_rows = 0;    // ... of which the first ones by one tile (kSampleRows)
  int64_t splits = 0;  // the most splits of one launch
  int64_t workspace_bytes = 0;
  int64_t rerank_workspace_bytes = 0;
  // ---- allocate_search ----
  PoolBuffer<float> tiles[2];
  PoolBuffer<float> split_keys;  // fused: each query's split_kc best of each split
  PoolBuffer<int32_t> split_rows;
  PoolBuffer<float> split_bounds;  // truncated splits: per query, the smallest last key of its splits
  PoolBuffer<float> gemv_keys;     // the GEMV pass: each query's kc best of each block
  PoolBuffer<int32_t> gemv_rows;
  PoolBuffer<float> gemv_norms_max;  // and each block's largest norm (gemv_base_stats())
  PoolBuffer<char> workspace;
  PoolBuffer<float> best_keys;  // the running kc best of each query
  PoolBuffer<int32_t> best_rows;
  PoolBuffer<float> rerank_keys, final_keys;  // exact keys of the candidates, the k best
  PoolBuffer<int32_t> final_rows;
  PoolBuffer<char> rerank_workspace;
  PoolBuffer<float> chunk_floats[2], chunk_norms[2];
  PoolBuffer<uint16_t> chunk_half[2];
  PoolBuffer<int32_t> gather_rows;
  // ---- allocate_results ----
  PoolBuffer<float> out_distances;
  PoolBuffer<int64_t> out_ids;
  float* result_d = nullptr;
  int64_t* result_i = nullptr;
  uint8_t* result_flags = nullptr;
  int64_t packed_bytes = 0;
  bool packed = false;
  PoolBuffer<char> packed_results;
  // ---- the search ----
  int64_t step = 0;  // tiles so far; its parity picks the stream and the buffer
  std::vector<int32_t> candidates, positions;  // rerank_from_host's host copies
  int64_t pending = -1;  // query tile whose results still go to the host
  int64_t pending_rows = 0;
};

// Derives what the stages share from the inputs; no CUDA work.
Pass::Pass(Shared& shared, const float* query_data, int64_t query_count, int64_t result_k, const PassSpec& pass_spec,
           float* distances_out, int64_t* ids_out, std::vector<uint8_t>* flags_out)
    : sh(shared),
      resources(*shared.resources),
      device(resources.device()),
      pool(resources.pool()),
      staging(resources.staging()),
      s0(resources.stream(0)),
      copy_stream(resources.stream(Resources::kCopyStream)),
      spec(pass_spec),
      queries(query_data),
      nq(query_count),
      k(result_k),
      distances(distances_out),
      ids(ids_out),
      flags(flags_out),
      l2(shared.l2),
      n(shared.n),
      dim(shared.dim),
      base(shared.base),
      base_norms(shared.base_norms),
      direct(pass_spec.kind == TileKind::direct),
      half(is_half(pass_spec.kind)),
      mode(gemm_mode(pass_spec.kind)),
      kc(pass_spec.kc),
      streamed(shared.streamed),
      arriving(shared.arriving),
      chunked(shared.streamed || shared.arriving),
      chunk_rows(shared.chunk_rows),
      norms_on_device(shared.norms_on_device),
      y(shared.y),
      y_norms(shared.y_norms),
      outputs_on_device(memory_kind(distances_out, device) == MemoryKind::device &&
                        memory_kind(ids_out, device) == MemoryKind::device),
      centred(pass_spec.centred),
      key16(half && !pass_spec.certify && (!streamed || mode == ComputeMode::bf16)),
      rounding(half && mode == ComputeMode::fp16 ? InputRounding::fp16 : InputRounding::tf32),
      alpha(l2 ? -2.f : -1.f),
      gemm_value_bytes(half ? sizeof(uint16_t) : sizeof(float)),
      stats_read_rows(pass_spec.model.rounded_inputs || !l2),
      norms_scale(static_cast<float>(1 + 2 * pass_spec.model.norms)),
      tile_align(key16 ? 8 : 4),
      chunk_needs_norms(l2 && !direct && (!norms_on_device || centred)),
      gather_queries(std::max<int64_t>(1, chunk_rows / kc)) {}

// The queries on the device (x), and for centred passes their centred copy (xc).
// Large host queries wait for plan_search, which may have them arrive tile by tile
// (kArrivingQueryBytes), and start_queries; the rest are copied now.
void Pass::upload_queries() {
  x = queries;
  const MemoryKind kind = memory_kind(queries, device);
  if (kind != MemoryKind::device) {
    query_copy = PoolBuffer<float>(pool, nq * dim);
    x = query_copy.get();
  }
  xc = x;
  yc = centred && !streamed ? sh.centred_base.get() : y;
  yc_norms = centred && !streamed ? sh.centred_norms.get() : y_norms;
  if (centred) {
    query_centred = PoolBuffer<float>(pool, nq * dim);
    xc = query_centred.get();
  }
  // (The fast half modes size their tiles' scale from every query first.)
  queries_deferred = (kind == MemoryKind::host_pageable || kind == MemoryKind::host_pinned) &&
                     (!half || spec.certify) && !chunked && nq * dim * int64_t(sizeof(float)) >= kArrivingQueryBytes;
  if (!queries_deferred) upload_query_rows(0, nq);
}

// Deferred queries after plan_search: copied whole now, unless they arrive by query tile
// (search_resident), whose centring on the copy stream reads the centre stream 0 put on the device.
void Pass::start_queries() {
  if (!queries_deferred) return;
  if (!queries_arriving) {
    upload_query_rows(0, nq);
    return;
  }
  QV_CUDA_CHECK(cudaEventRecord(query_tile_event(), s0));
  QV_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, query_tile_event(), 0));
}

// Queries [q0, q0 + rows) to the device where they are elsewhere, and centred where the pass is: on
// stream 0, or for arriving ones on the copy stream, so that a tile's copy and centring do not wait
// for the selections of the tile before.
void Pass::upload_query_rows(int64_t q0, int64_t rows) {
  const cudaStream_t stream = queries_arriving ? copy_stream : s0;
  if (x != queries)
    copy_to_device(staging, device, query_copy.get() + q0 * dim, queries + q0 * dim,
                   size_t(rows * dim) * sizeof(float), stream);
  if (centred) launch_centre(x + q0 * dim, rows, dim, sh.centre.get(), query_centred.get() + q0 * dim, stream);
  if (query_half.get() != nullptr) {  // a certified half pass's deferred queries (choose_gemm_operands)
    launch_to_half(xc + q0 * dim, rows, dim, mode, query_half.get() + q0 * depth, overflow.get() + 1, nullptr,
                   stream);
  }
}

// An arriving query tile, before its GEMMs: copied and centred, then its certificate statistics on
// stream 1 (where base statistics and every other tile's GEMMs also run).
void Pass::arrive_query_tile(int64_t q0, int64_t rows) {
  upload_query_rows(q0, rows);
  QV_CUDA_CHECK(cudaEventRecord(query_tile_event(), copy_stream));
  cudaStream_t s1 = resources.stream(1);
  QV_CUDA_CHECK(cudaStreamWaitEvent(s0, query_tile_event(), 0));
  QV_CUDA_CHECK(cudaStreamWaitEvent(s1, query_tile_event(), 0));
  if (!spec.certify) return;
  launch_query_stats(xc + q0 * dim, rows, dim, query_stats.get() + 2 * q0, s1, rounding);
  QV_CUDA_CHECK(cudaEventRecord(stats_event(), s1));
}

// The GEMM's operands: the (centred) floats, or for the 16-bit modes their half copies, made here
// for the queries and an unstreamed base (a streamed base's with each chunk).
void Pass::choose_gemm_operands() {
  gemm_y = yc;
  gemm_x = xc;
  depth = dim;
  if (!half) return;
  depth = half_row_stride(dim);
  query_half = PoolBuffer<uint16_t>(pool, nq * depth);
  overflow = PoolBuffer<int>(pool, 4);
  QV_CUDA_CHECK(cudaMemsetAsync(overflow.get(), 0, 4 * sizeof(int), s0));
  unsigned* max_abs =
      key16 && mode == ComputeMode::fp16 ? reinterpret_cast<unsigned*>(overflow.get() + 2) : nullptr;
  // (Deferred queries are rounded as they arrive: upload_query_rows.)
  if (!queries_deferred)
    launch_to_half(xc, nq, dim, mode, query_half.get(), overflow.get() + 1, max_abs ? max_abs + 1 : nullptr, s0);
  if (!streamed) {
    base_half = PoolBuffer<uint16_t>(pool, n * depth);
    launch_to_half(yc, n, dim, mode, base_half.get(), overflow.get(), max_abs, s0);
    check_overflow();
    gemm_y = base_half.get();
    if (mode == ComputeMode::fp16) {
      float max_y = 0.f, max_x = 0.f;
      std::memcpy(&max_y, &flags_h[2], sizeof max_y);
      std::memcpy(&max_x, &flags_h[3], sizeof max_x);
      tile_scale = fp16_tile_scale(l2 ? -2.f : -1.f, dim, max_x, max_y);
    }
  }
  gemm_x = query_half.get();
}

// fp16: refuses values beyond half's range (after the conversions queued on s0).
void Pass::check_overflow() {
  // (A certified pass's base is within range (knn_search); a query beyond it has an infinite
  // residual, which fails its certificate: the float pass answers it.)
  if (mode != ComputeMode::fp16 || spec.certify) return;
  QV_CUDA_CHECK(cudaMemcpyAsync(flags_h, overflow.get(), sizeof flags_h, cudaMemcpyDeviceToHost, s0));
  QV_CUDA_CHECK(cudaStreamSynchronize(s0));
  if (flags_h[0] != 0 || flags_h[1] != 0)
    fail(Status::invalid_argument, "mode fp16: ", flags_h[0] != 0 ? "base" : "query",
         " values beyond the half-precision range (magnitude above 65504); use bf16, tf32 or fp32");
}

// Certified passes: room for the queries' and the base's statistics and the per-query flags.
void Pass::allocate_certificate() {
  if (!spec.certify) return;
  query_stats = PoolBuffer<double>(pool, 2 * nq);
  base_stats = PoolBuffer<unsigned>(pool, kBaseStatsCount);
  flags_device = PoolBuffer<uint8_t>(pool, nq);
}

// Adds `count` base rows (at `rows`, their norms at `norms`) to the certificate's statistics: from the
// rows, or (L2 on exact inputs) from the largest of their norms.
void Pass::gather_base_stats(const float* rows, const float* norms, int64_t count, cudaStream_t stream) {
  if (stats_read_rows) {
    launch_base_stats(rows, count, dim, base_stats.get(), stream, rounding);
  } else {
    launch_norms_max(norms, count, norms_scale, base_stats.get(), stream);
  }
}

// The tiling (or the fused kernel where it takes the shape) and the selections' workspace sizes for
// every tile shape it leads to.
void Pass::plan_search() {
  // The SGEMM pass of a small batch over a base on the device: one read of the base, no tiles.
  gemv = spec.kind == TileKind::sgemm && !chunked && gemv_select_on.load(std::memory_order_relaxed) &&
         gemv_select_fits(nq, dim, kc);
  if (gemv) {
    plan = {nq, n};
    gemv_blocks = gemv_select_blocks(resources.limits(), nq, n, dim, kc, spec.half_rows);
    rerank_workspace_bytes = select_workspace_bytes<int32_t>(resources.limits(), nq, kc, k);
    return;
  }
  // The TF32 pass in one kernel, where it takes the shape: no distance tiles, the splits' candidates
  // selected into the running best instead.
  // A certified pass may truncate the splits' lists (see the top of the file).
  split_kc = spec.certify ? std::min(kc, kTf32SelectMaxK) : kc;
  // A base in chunks: one launch a chunk.
  const int64_t fused_rows = chunked ? chunk_rows : n;
  fused = spec.kind == TileKind::tf32 && nq >= min_fused_queries.load(std::memory_order_relaxed) &&
          fused_rows >= kMinFusedRows &&
          reinterpret_cast<uintptr_t>(xc) % 16 == 0 && reinterpret_cast<uintptr_t>(yc) % 16 == 0 &&
          tf32_select_fits(resources.limits(), dim, split_kc, n);
  // Deferred queries arrive by query tile on a tiled search (kArrivingQueryTiles of them); the fused
  // kernel takes them whole.
  const int64_t tile_floats = resources.tile_bytes() / int64_t(sizeof(float));
  const int64_t tiled_query_rows = queries_deferred ? (nq + kArrivingQueryTiles - 1) / kArrivingQueryTiles : nq;
  // (A base in chunks finishes every query tile after its last chunk: nothing to overlap there.)
  const int64_t result_row_bytes = k * int64_t(sizeof(float) + sizeof(int64_t));
  const int64_t fused_query_rows =
      outputs_on_device || chunked
          ? kFusedQueryRows
          : std::clamp(fused_result_tile_bytes.load(std::memory_order_relaxed) / result_row_bytes, kMinFusedResultRows,
                       kFusedQueryRows);
  plan = fused ? plan_fused(nq, n, fused_query_rows) : plan_tiles(tile_floats, nq, n, kc, tiled_query_rows);
  min_splits = split_kc < kc ? kTruncatedSplitsPerList * kc / split_kc : 1;
  splits = fused ? tf32_select_splits(resources.limits(), plan.query_rows, fused_rows, min_splits) : 0;
  if (fused && splits * split_kc < kc) {  // too few splits to hold kc candidates
    fused = false;
    plan = plan_tiles(tile_floats, nq, n, kc, tiled_query_rows);
    splits = 0;
  }
  queries_arriving = queries_deferred && !fused;
  if (queries_arriving && sh.arriving_query_tiles == 0)
    sh.arriving_query_tiles = (nq + plan.query_rows - 1) / plan.query_rows;
  // The bounding part, where its splits hold kc candidates (see kBoundingPart).
  if (fused && !chunked) {
    const int64_t rows = round_up(n / kBoundingPart, kColumnAlign);
    const int64_t parts = std::min(splits, tf32_select_splits(resources.limits(), plan.query_rows, rows, min_splits));
    bounding_rows = rows < n && parts * split_kc >= kc ? rows : 0;
    const int64_t sample = std::min(kSampleRows, tile_floats / plan.query_rows / kColumnAlign * kColumnAlign);
    sample_rows = bounding_rows >= 2 * sample && kc <= kSampleMaxCandidates && sample >= kc ? sample : 0;
  }
  // A tiled search's chunks are whole tiles, as a streamed base's: the GEMMs and selections of the
  // resident search, so the fast modes' results are the same too. (One chunk: copied, then searched.)
  if (arriving && !fused) chunk_rows = std::min(n, round_up(chunk_rows, plan.columns));

  const int64_t column_tiles = (n + plan.columns - 1) / plan.columns;
  const int64_t last_columns = n - (column_tiles - 1) * plan.columns;
  const int64_t last_query_rows = nq - (nq - 1) / plan.query_rows * plan.query_rows;
  auto select_workspace = [&](int64_t rows, int64_t cols) {
    if (cols > 0)
      workspace_bytes = std::max(workspace_bytes, select_workspace_bytes<int32_t>(resources.limits(), rows, cols, kc));
  };
  for (int64_t rows : {plan.query_rows, last_query_rows}) {
    if (fused) {
      select_workspace(rows, splits * split_kc);  // the splits' candidates
      select_workspace(rows, sample_rows);        // the sample's tile
    } else {
      for (int64_t cols : {plan.columns, last_columns, std::min(plan.columns, chunk_rows % plan.columns)})
        select_workspace(rows, cols);
    }
    if (!direct)
      rerank_workspace_bytes =
          std::max(rerank_workspace_bytes, select_workspace_bytes<int32_t>(resources.limits(), rows, kc, k));
  }
}

// The search's device buffers: distance tiles (or the fused kernel's split candidates), the running
// best, the re-rank's, and a streamed base's two chunks.
void Pass::allocate_search() {
  if (gemv) {
    gemv_keys = PoolBuffer<float>(pool, nq * gemv_blocks * kc);
    gemv_rows = PoolBuffer<int32_t>(pool, nq * gemv_blocks * kc);
    if (gemv_base_stats()) gemv_norms_max = PoolBuffer<float>(pool, gemv_blocks);
  } else if (fused) {
    split_keys = PoolBuffer<float>(pool, plan.query_rows * splits * split_kc);
    split_rows = PoolBuffer<int32_t>(pool, plan.query_rows * splits * split_kc);
    if (split_kc < kc) split_bounds = PoolBuffer<float>(pool, nq);
    // The sample's tile; without the memory for it, the bounding part starts unbounded.
    if (sample_rows > 0) {
      const int64_t entries = plan.query_rows * round_up(sample_rows, tile_align);
      try {
        tiles[0] = PoolBuffer<float>(pool, entries);
        pool.zero_once(tiles[0].get(), size_t(entries) * sizeof(float), s0);  // as below
      } catch (const Error& e) {
        if (e.status() != Status::out_of_device_memory) throw;
        sample_rows = 0;
      }
    }
  } else {
    const int64_t tile_entries = plan.query_rows * round_up(plan.columns, tile_align) / (key16 ? 2 : 1);
    tiles[0] = PoolBuffer<float>(pool, tile_entries);
    tiles[1] = PoolBuffer<float>(pool, tile_entries);
    // initcheck does not see the writes of cuBLAS's tensor-core GEMMs (16-bit tiles, or float tiles
    // of a 16-bit GEMM): zeroed once while the pool keeps them, on s0 (stream 1 waits for it). Every
    // call zeroing its tiles took 0.48 ms of a 7.5 ms search of Fashion-MNIST.
    if (mode != ComputeMode::fp32)
      for (PoolBuffer<float>& tile : tiles) pool.zero_once(tile.get(), size_t(tile_entries) * sizeof(float), s0);
  }
  workspace = PoolBuffer<char>(pool, workspace_bytes);
  best_keys = PoolBuffer<float>(pool, nq * kc);
  best_rows = PoolBuffer<int32_t>(pool, nq * kc);
  if (!direct) {
    rerank_keys = PoolBuffer<float>(pool, nq * kc);
    final_keys = PoolBuffer<float>(pool, nq * k);
    final_rows = PoolBuffer<int32_t>(pool, nq * k);
    rerank_workspace = PoolBuffer<char>(pool, rerank_workspace_bytes);
  }
  // Streaming: two chunks (floats, norms, half copies); the re-rank later gathers the candidates'
  // rows on the host into chunk 0, gather_queries queries at a time, with their positions in
  // gather_rows.
  if (streamed) {
    for (int b = 0; b < 2; ++b) {
      chunk_floats[b] = PoolBuffer<float>(pool, chunk_rows * dim);
      if (chunk_needs_norms) chunk_norms[b] = PoolBuffer<float>(pool, chunk_rows);
      if (half) chunk_half[b] = PoolBuffer<uint16_t>(pool, chunk_rows * depth);
    }
    if (!direct) gather_rows = PoolBuffer<int32_t>(pool, gather_queries * kc);
  }
}

// Where the finalize writes: the caller's device outputs, a device copy of host outputs, or (small
// host results) one packed buffer that comes back with the flags in one copy: one round trip.
void Pass::allocate_results() {
  result_d = distances;
  result_i = ids;
  result_flags = flags_device.get();
  packed_bytes = nq * k * int64_t(sizeof(int64_t) + sizeof(float)) + (spec.certify ? nq : 0);
  packed = !outputs_on_device && nq <= plan.query_rows && packed_bytes <= kPackedResultBytes;
  if (packed) {
    packed_results = PoolBuffer<char>(pool, packed_bytes);
    result_i = reinterpret_cast<int64_t*>(packed_results.get());  // 8-byte entries first: all aligned
    result_d = reinterpret_cast<float*>(result_i + nq * k);
    if (spec.certify) result_flags = reinterpret_cast<uint8_t*>(result_d + nq * k);
  } else if (!outputs_on_device) {
    out_distances = PoolBuffer<float>(pool, nq * k);
    out_ids = PoolBuffer<int64_t>(pool, nq * k);
    result_d = out_distances.get();
    result_i = out_ids.get();
  }
}

// Stream 1 starts after the inputs are ready. The certificate's statistics: a resident base's on
// stream 1, beside the first tile (stream 0), off the critical path of small searches (copied from
// those an index's DeviceMatrix keeps, where the pass reads uncentred rows: a small batch's search
// then reads the base once); a base searched in chunks with each chunk (stream 0).
void Pass::start_streams() {
  if (!gemv) QV_CUDA_CHECK(cudaEventRecord(inputs_event(), s0));  // search_gemv recorded it already
  QV_CUDA_CHECK(cudaStreamWaitEvent(resources.stream(1), inputs_event(), 0));
  if (!spec.certify) return;
  cudaStream_t s1 = resources.stream(1);
  // The GEMV pass gathers the queries' (and from the norms the base's) itself, on stream 0.
  if (!gemv && !queries_arriving) launch_query_stats(xc, nq, dim, query_stats.get(), s1, rounding);
  if (gemv_base_stats()) {
    QV_CUDA_CHECK(cudaEventRecord(stats_event(), s1));
    return;
  }
  QV_CUDA_CHECK(cudaMemsetAsync(base_stats.get(), 0, kBaseStatsCount * sizeof(unsigned), s1));
  // (The 16-bit rows' statistics are of their residuals, which the rows themselves do not give; a
  // DeviceMatrix keeps its rows' TF32 residuals, not their half ones.)
  const unsigned* kept = spec.half_rows ? sh.half_rows.stats
                         : rounding == InputRounding::tf32 ? sh.kept_base_stats
                                                           : nullptr;
  if (!chunked && stats_read_rows && !centred && kept != nullptr) {
    QV_CUDA_CHECK(cudaMemcpyAsync(base_stats.get(), kept, kBaseStatsCount * sizeof(unsigned),
                                  cudaMemcpyDeviceToDevice, s1));
  } else if (!chunked) {
    gather_base_stats(yc, yc_norms, n, s1);
  }
  QV_CUDA_CHECK(cudaEventRecord(stats_event(), s1));
  // Stream 0's chunk statistics follow the zeroing.
  if (chunked) QV_CUDA_CHECK(cudaStreamWaitEvent(s0, stats_event(), 0));
}

// Tile + selection: queries [q0, q0 + rows) against base rows [c0, c0 + cols), whose tile operand
// starts at tile_y and whose norms (L2 GEMM tiles) at bias, on tile and stream `slot` (by default
// alternating). Returns the stream it ran on.
cudaStream_t Pass::search_tile(int64_t q0, int64_t rows, int64_t c0, int64_t cols, const void* tile_y,
                               const float* bias, int slot) {
  const int64_t ld = round_up(cols, tile_align);
  if (slot < 0) slot = static_cast<int>(step & 1);
  cudaStream_t stream = resources.stream(slot);
  float* tile = tiles[slot].get();
  // The tile buffer is free: the selection that last read it ran on this same stream.
  if (direct) {
    launch_direct_tile(x + q0 * dim, static_cast<const float*>(tile_y), rows, cols, dim, l2, tile, ld, stream);
  } else if (key16) {
    distance_gemm16(resources.blas(slot), mode, cols, rows, depth, alpha * tile_scale, tile_y, depth,
                    static_cast<const char*>(gemm_x) + size_t(q0 * depth) * gemm_value_bytes, depth, tile, ld);
  } else {
    distance_gemm(resources.blas(slot), mode, cols, rows, depth, alpha, tile_y, depth,
                  static_cast<const char*>(gemm_x) + size_t(q0 * depth) * gemm_value_bytes, depth, tile, ld);
  }
  // Selections run in order: each continues from the previous one's results (and they share
  // the workspace).
  if (step > 0) QV_CUDA_CHECK(cudaStreamWaitEvent(stream, chain_event(), 0));
  SelectRequest<int32_t> request;
  request.keys = tile;
  if (key16) {
    request.key_format = mode == ComputeMode::fp16 ? KeyFormat::f16 : KeyFormat::bf16;
    request.keys16 = tile;
    request.key_scale = 1.f / tile_scale;
  }
  request.ld = ld;
  request.rows = rows;
  request.cols = cols;
  request.k = kc;
  request.column_bias = direct ? nullptr : bias;
  request.id_base = c0;
  request.prev_keys = c0 > 0 ? best_keys.get() + q0 * kc : nullptr;
  request.prev_ids = c0 > 0 ? best_rows.get() + q0 * kc : nullptr;
  request.filter = sh.filter.bits != nullptr ? sh.filter_copy.get() : nullptr;
  request.filter_bits = sh.filter.nbits;
  request.out_keys = best_keys.get() + q0 * kc;
  request.out_ids = best_rows.get() + q0 * kc;
  request.keep_missing_as_sentinel = true;
  select_rows(request, resources.limits(), workspace.get(), stream);
  QV_CUDA_CHECK(cudaEventRecord(chain_event(), stream));
  ++step;
  return stream;
}

// The fused TF32 pass of queries [q0, q0 + rows) against base rows [first_row, first_row + count) at
// `part` (their norms at part_norms, L2): the whole base, or a chunk, whose selection continues from
// the chunks before. On stream 0.
cudaStream_t Pass::search_fused(int64_t q0, int64_t rows, const float* part, const float* part_norms,
                                int64_t first_row, int64_t count) {
  const uint8_t* filter = sh.filter.bits != nullptr ? sh.filter_copy.get() : nullptr;
  const int64_t parts =
      std::min(splits, tf32_select_splits(resources.limits(), plan.query_rows, count, min_splits));
  // After the first chunk, no row above a query's kc-th best so far can join its candidates.
  const float* bounds = first_row > 0 ? best_keys.get() + q0 * kc + kc - 1 : nullptr;
  launch_tf32_select(resources.limits(), xc + q0 * dim, rows, part, l2 ? part_norms : nullptr, count, dim, split_kc,
                     l2, filter, sh.filter.nbits, parts, split_keys.get(), split_rows.get(), s0,
                     Tf32SelectKernel::automatic, first_row, bounds, kc);
  // (The sample's tile keeps every candidate: the first fused part starts the split bounds.)
  if (split_kc < kc)
    launch_split_bounds(split_keys.get(), rows, parts, split_kc, split_bounds.get() + q0, s0,
                        first_row > sample_rows);
  SelectRequest<int32_t> request;
  request.keys = split_keys.get();
  request.ld = parts * split_kc;
  request.rows = rows;
  request.cols = parts * split_kc;
  request.k = kc;
  request.ids = split_rows.get();
  request.prev_keys = first_row > 0 ? best_keys.get() + q0 * kc : nullptr;
  request.prev_ids = first_row > 0 ? best_rows.get() + q0 * kc : nullptr;
  request.out_keys = best_keys.get() + q0 * kc;
  request.out_ids = best_rows.get() + q0 * kc;
  request.keep_missing_as_sentinel = true;
  select_rows(request, resources.limits(), workspace.get(), s0);
  return s0;
}

// The GEMV pass (gemv_select.h) of every query against the resident base, into the running best
// (whole: there is one query tile). The finish's re-rank reads the uncentred rows: those are
// prefetched. The pass gathers the certificate's statistics of the queries, and of an L2 base from
// its norms, itself: kernels of their own on stream 1 waited for SMs until the GEMV's persistent
// blocks ended, and the finish for them. Launched before start_streams (run_pass), which queues what
// statistics remain (a base's kept ones, or those read from its rows) on stream 1.
void Pass::search_gemv() {
  QV_CUDA_CHECK(cudaEventRecord(inputs_event(), s0));
  const uint8_t* filter = sh.filter.bits != nullptr ? sh.filter_copy.get() : nullptr;
  GemvStats stats;
  if (spec.certify) stats.query_stats = query_stats.get();
  if (gemv_base_stats()) {
    stats.base_stats = base_stats.get();
    stats.norms_scale = norms_scale;
    stats.block_norms_max = gemv_norms_max.get();
  }
  launch_gemv_select(xc, nq, yc, spec.half_rows ? sh.half_rows.rows : nullptr, l2 ? yc_norms : nullptr, n, dim, kc,
                     filter, sh.filter.nbits, gemv_blocks, gemv_keys.get(), gemv_rows.get(), best_keys.get(),
                     best_rows.get(), y, stats, s0);
}

// A base on the device: each query tile against every base tile (or the fused kernel, or the GEMV
// pass), then its end.
void Pass::search_resident() {
  for (int64_t q0 = 0, t = 0; q0 < nq; q0 += plan.query_rows, ++t) {
    const int64_t rows = std::min(plan.query_rows, nq - q0);
    cudaStream_t stream = nullptr;
    if (gemv) {
      stream = s0;  // launched by run_pass
    } else if (fused) {
      const int64_t s = sample_rows, r0 = bounding_rows;
      if (s > 0) search_tile(q0, rows, 0, s, gemm_y, l2 ? yc_norms : nullptr, 0);  // on stream 0, as the rest
      if (r0 > 0) search_fused(q0, rows, yc + s * dim, l2 ? yc_norms + s : nullptr, s, r0 - s);
      stream = search_fused(q0, rows, yc + r0 * dim, l2 ? yc_norms + r0 : nullptr, r0, n - r0);
    } else {
      if (queries_arriving) arrive_query_tile(q0, rows);
      for (int64_t c0 = 0; c0 < n; c0 += plan.columns) {
        stream = search_tile(q0, rows, c0, std::min(plan.columns, n - c0),
                             static_cast<const char*>(gemm_y) + size_t(c0 * depth) * gemm_value_bytes,
                             l2 ? yc_norms + c0 : nullptr);
      }
    }
    finish_query_tile(q0, rows, t, stream);
  }
}

// A base searched chunk by chunk: chunk i + 1 is copied on the copy stream (through the pinned
// staging for pageable memory) while chunk i is searched: every query tile against the chunk's base
// tiles (or one fused launch over its rows), each query tile's selection continuing from its running
// best as across base tiles above. A streamed base's chunks take turns in two buffers; an arriving
// base's fill its device copy. The query tiles' ends follow the last chunk.
void Pass::search_chunked() {
  const int64_t chunks = (n + chunk_rows - 1) / chunk_rows;
  sh.chunks_searched = chunks;
  upload_chunk(0);
  cudaStream_t stream = s0;
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    stream = search_chunk(chunk, stream);
    if (chunk + 1 < chunks) upload_chunk(chunk + 1);
  }
  if (half) check_overflow();
  // The statistics (stream 0) precede the certificates.
  if (spec.certify) {
    QV_CUDA_CHECK(cudaEventRecord(chunk_ready_event(), s0));
    QV_CUDA_CHECK(cudaStreamWaitEvent(stream, chunk_ready_event(), 0));
  }
  for (int64_t q0 = 0, t = 0; q0 < nq; q0 += plan.query_rows, ++t)
    finish_query_tile(q0, std::min(plan.query_rows, nq - q0), t, stream);
}

// Copies chunk `chunk` of the host base (and the caller's norms, where used) to the device on the
// copy stream: into its buffer once the buffer's previous chunk is searched (streamed), or into its
// place in the device copy (arriving).
void Pass::upload_chunk(int64_t chunk) {
  const int b = static_cast<int>(chunk & 1);
  const int64_t r0 = chunk * chunk_rows;
  const int64_t count = std::min(chunk_rows, n - r0);
  // The buffer's previous chunk (chunk - 2) is searched.
  if (streamed && chunk >= 2) QV_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, chunk_free_event(b), 0));
  float* rows = streamed ? chunk_floats[b].get() : sh.base_copy.get() + r0 * dim;
  copy_to_device(staging, device, rows, base + r0 * dim, size_t(count * dim) * sizeof(float), copy_stream);
  if (chunk_needs_norms && base_norms != nullptr && !centred) {
    float* norms = streamed ? chunk_norms[b].get() : sh.norms_copy.get() + r0;
    copy_to_device(staging, device, norms, base_norms + r0, size_t(count) * sizeof(float), copy_stream);
  }
  QV_CUDA_CHECK(cudaEventRecord(chunk_copied_event(b), copy_stream));
}

// A copied chunk made ready for its tiles on stream 0: centred (a streamed chunk in place, an
// arriving one into the centred copy: its original rows stay for the re-rank), its norms, its
// certificate statistics, its half copy; then stream 1 may start on it.
Pass::ChunkOperands Pass::stage_chunk(int64_t chunk) {
  const int b = static_cast<int>(chunk & 1);
  const int64_t r0 = chunk * chunk_rows;
  const int64_t count = std::min(chunk_rows, n - r0);
  QV_CUDA_CHECK(cudaStreamWaitEvent(s0, chunk_copied_event(b), 0));
  const float* chunk_y = streamed ? chunk_floats[b].get() : y + r0 * dim;
  if (centred) {
    float* centred_rows = streamed ? chunk_floats[b].get() : sh.centred_base.get() + r0 * dim;
    launch_centre(chunk_y, count, dim, sh.centre.get(), centred_rows, s0);
    chunk_y = centred_rows;
  }
  ChunkOperands operands;
  if (l2 && !direct) {
    if (norms_on_device && !centred) {
      operands.bias = base_norms + r0;
    } else {
      float* norms = streamed ? chunk_norms[b].get() : (centred ? sh.centred_norms.get() : sh.norms_copy.get()) + r0;
      if (base_norms == nullptr || centred) launch_row_norms(chunk_y, count, dim, norms, s0);
      operands.bias = norms;
    }
  }
  if (spec.certify) gather_base_stats(chunk_y, operands.bias, count, s0);
  operands.gemm_y = chunk_y;
  if (half) {
    launch_to_half(chunk_y, count, dim, mode, chunk_half[b].get(), overflow.get(), s0);
    operands.gemm_y = chunk_half[b].get();
  }
  QV_CUDA_CHECK(cudaEventRecord(chunk_ready_event(), s0));
  QV_CUDA_CHECK(cudaStreamWaitEvent(resources.stream(1), chunk_ready_event(), 0));
  return operands;
}

// One chunk's search: staged, then every query tile against its base tiles (or its fused launch).
// `stream` is the last selection's so far; returns the chunk's last selection's.
cudaStream_t Pass::search_chunk(int64_t chunk, cudaStream_t stream) {
  const int b = static_cast<int>(chunk & 1);
  const int64_t r0 = chunk * chunk_rows;
  const int64_t count = std::min(chunk_rows, n - r0);
  const ChunkOperands operands = stage_chunk(chunk);
  for (int64_t q0 = 0; q0 < nq; q0 += plan.query_rows) {
    const int64_t rows = std::min(plan.query_rows, nq - q0);
    if (fused) {
      stream = search_fused(q0, rows, static_cast<const float*>(operands.gemm_y), operands.bias, r0, count);
      continue;
    }
    for (int64_t c = 0; c < count; c += plan.columns) {
      stream = search_tile(q0, rows, r0 + c, std::min(plan.columns, count - c),
                           static_cast<const char*>(operands.gemm_y) + size_t(c * depth) * gemm_value_bytes,
                           operands.bias != nullptr ? operands.bias + c : nullptr);
    }
  }
  // Every tile of the chunk precedes its selection, and the selections are chained: after the
  // last one, the chunk's buffers are free.
  QV_CUDA_CHECK(cudaEventRecord(chunk_free_event(b), stream));
  return stream;
}

// Streamed re-rank: the candidates' exact keys from the host base. The candidate rows come to the
// host, their vectors are gathered there (on the staging's copy threads) into chunk 0 (free once the
// search is done: `stream` follows the last selection), and the same re-rank kernel reads them there.
void Pass::rerank_from_host(int64_t q0, int64_t rows, cudaStream_t stream) {
  constexpr int32_t kNone = std::numeric_limits<int32_t>::max();  // the selection's "no row"
  candidates.resize(size_t(rows * kc));
  copy_from_device(staging, device, candidates.data(), best_rows.get() + q0 * kc,
                   candidates.size() * sizeof(int32_t), stream);
  positions.resize(size_t(gather_queries * kc));
  for (int64_t g0 = 0; g0 < rows; g0 += gather_queries) {
    const int64_t count = std::min(gather_queries, rows - g0) * kc;
    for (int64_t i = 0; i < count; ++i)
      positions[size_t(i)] = candidates[size_t(g0 * kc + i)] == kNone ? kNone : int32_t(i);
    copy_to_device(staging, device, gather_rows.get(), positions.data(), size_t(count) * sizeof(int32_t), stream);
    staging.gather_to_device(chunk_floats[0].get(), base, dim, candidates.data() + g0 * kc, count, kNone, stream);
    launch_rerank(chunk_floats[0].get(), x + (q0 + g0) * dim, dim, gather_rows.get(), count / kc, kc, l2,
                  rerank_keys.get() + (q0 + g0) * kc, stream);
  }
}

// The kc candidates of query tile [q0, q0 + rows) to its results: their exact keys, the k best of
// them, the certificate (certified passes) and the finalize, on `stream`.
void Pass::rerank_query_tile(int64_t q0, int64_t rows, cudaStream_t stream) {
  if (streamed) {
    rerank_from_host(q0, rows, stream);
  } else {
    launch_rerank(y, x + q0 * dim, dim, best_rows.get() + q0 * kc, rows, kc, l2, rerank_keys.get() + q0 * kc, stream);
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
  if (spec.certify)
    launch_certify(spec.model, best_keys.get() + q0 * kc, best_rows.get() + q0 * kc, kc, final_keys.get() + q0 * k,
                   final_rows.get() + q0 * k, k, rows, query_stats.get() + 2 * q0, base_stats.get(),
                   result_flags + q0, stream, split_bounds.size() > 0 ? split_bounds.get() + q0 : nullptr);
  launch_finalize(final_keys.get() + q0 * k, final_rows.get() + q0 * k, rows, k, nullptr, l2, result_d + q0 * k,
                  result_i + q0 * k, stream);
}

// The end of query tile t (its selections done, on `stream`): the finalize, or the re-rank, the k
// best of the candidates, the certificate and the finalize; then the previous tile's results go
// to the host.
void Pass::finish_query_tile(int64_t q0, int64_t rows, int64_t t, cudaStream_t stream) {
  if (spec.certify && !chunked) QV_CUDA_CHECK(cudaStreamWaitEvent(stream, stats_event(), 0));
  if (direct) {  // kc == k; the keys are whole distances
    launch_finalize(best_keys.get() + q0 * k, best_rows.get() + q0 * k, rows, k, nullptr, l2, result_d + q0 * k,
                    result_i + q0 * k, stream);
  } else if (!streamed && kc <= kSmallFinishCandidates) {
    launch_finish_small(y, x + q0 * dim, dim, best_keys.get() + q0 * kc, best_rows.get() + q0 * kc, kc, k, rows, l2,
                        spec.certify ? &spec.model : nullptr, spec.certify ? query_stats.get() + 2 * q0 : nullptr,
                        base_stats.get(), spec.certify ? result_flags + q0 : nullptr, result_d + q0 * k,
                        result_i + q0 * k, stream);
  } else {
    rerank_query_tile(q0, rows, stream);
  }
  QV_CUDA_CHECK(cudaEventRecord(chain_event(), stream));
  if (!outputs_on_device && !packed) {
    QV_CUDA_CHECK(cudaEventRecord(tile_done_event(int(t & 1)), stream));
    // Arriving queries: the results come back together at the end, since a download waits on the
    // host for its tile and would hold back the next tile's queries.
    if (queries_arriving) {
      pending = 0;
      pending_rows = q0 + rows;
      return;
    }
    if (pending >= 0) download(pending, pending_rows, int((t - 1) & 1));
    pending = q0;
    pending_rows = rows;
  }
}

// Results of query tile t go to the host while tile t + 1 computes.
void Pass::download(int64_t q0, int64_t rows, int tile_parity) {
  download_result_rows(staging, device, copy_stream, tile_done_event(tile_parity), distances, ids, result_d, result_i,
                       q0, rows, k);
}

// The last query tile's host results, the packed results and the flags to the caller.
void Pass::deliver_results() {
  if (pending >= 0) download(pending, pending_rows, int(((nq - 1) / plan.query_rows) & 1));
  if (flags != nullptr) flags->resize(size_t(nq));
  // The results and flags are written before the last chain event.
  if (packed) {
    std::vector<char> host(static_cast<size_t>(packed_bytes));
    QV_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, chain_event(), 0));
    copy_from_device(staging, device, host.data(), packed_results.get(), host.size(), copy_stream);
    const auto* host_ids = reinterpret_cast<const int64_t*>(host.data());
    const auto* host_distances = reinterpret_cast<const float*>(host_ids + nq * k);
    put_from_host(device, ids, host_ids, size_t(nq * k) * sizeof(int64_t));
    put_from_host(device, distances, host_distances, size_t(nq * k) * sizeof(float));
    if (flags != nullptr) std::copy_n(reinterpret_cast<const uint8_t*>(host_distances + nq * k), nq, flags->begin());
  } else if (flags != nullptr) {
    QV_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, chain_event(), 0));
    copy_from_device(staging, device, flags->data(), flags_device.get(), size_t(nq), copy_stream);
  }
}

// One pass over the base for nq queries (host or device memory): distances and ids (nq x k, host or
// device) written, and with spec.certify, (*flags)[q] = whether query q's result is certified.
// Returns with every stream idle.
void run_pass(Shared& sh, const float* queries, int64_t nq, int64_t k, const PassSpec& spec, float* distances,
              int64_t* ids, std::vector<uint8_t>* flags) {
  Pass pass(sh, queries, nq, k, spec, distances, ids, flags);
  pass.upload_queries();
  pass.choose_gemm_operands();
  pass.allocate_certificate();
  pass.plan_search();
  pass.start_queries();
  pass.allocate_search();
  pass.allocate_results();
  if (pass.gemv) pass.search_gemv();
  pass.start_streams();
  if (pass.chunked) {
    pass.search_chunked();
  } else {
    pass.search_resident();
  }
  pass.deliver_results();
  if (pass.gemv) sh.gemv_queries += nq;
  if (pass.fused) sh.fused_queries += nq;
  // Later passes reuse the pool's blocks: nothing of this pass may still be running.
  sync_streams(*sh.resources);
  if (sh.arriving) {  // the whole base is on the device now
    sh.arriving = false;
    sh.chunk_rows = sh.n;
  }
}

// A pass for the queries `list` (rows of queries, host or device as the caller's) whose results
// replace those rows of distances / ids. With spec.certify only the certified rows are replaced;
// returns the others.
std::vector<int64_t> run_subset(Shared& sh, const float* queries, const std::vector<int64_t>& list, int64_t k,
                                const PassSpec& spec, float* distances, int64_t* ids) {
  Resources& resources = *sh.resources;
  const int device = resources.device();
  DevicePool& pool = resources.pool();
  HostStaging& staging = resources.staging();
  cudaStream_t s0 = resources.stream(0);
  const int64_t m = static_cast<int64_t>(list.size()), dim = sh.dim;
  const bool queries_on_device = memory_kind(queries, device) == MemoryKind::device;
  const bool outputs_on_device = memory_kind(distances, device) == MemoryKind::device &&
                                 memory_kind(ids, device) == MemoryKind::device;

  PoolBuffer<int64_t> list_device;
  PoolBuffer<float> device_queries;
  std::vector<float> host_queries;
  const float* sub_queries = nullptr;
  if (queries_on_device) {
    list_device = PoolBuffer<int64_t>(pool, m);
    device_queries = PoolBuffer<float>(pool, m * dim);
    copy_to_device(staging, device, list_device.get(), list.data(), size_t(m) * sizeof(int64_t), s0);
    launch_gather_rows(queries, dim, list_device.get(), m, device_queries.get(), s0);
    sub_queries = device_queries.get();
  } else {
    // Host memory is read in place; another device's memory row by row (a rare case).
    const bool host = memory_kind(queries, device) != MemoryKind::other_device;
    host_queries.resize(size_t(m * dim));
    for (int64_t i = 0; i < m; ++i) {
      if (host) {
        std::copy(queries + list[i] * dim, queries + (list[i] + 1) * dim, host_queries.begin() + i * dim);
      } else {
        QV_CUDA_CHECK(cudaMemcpy(host_queries.data() + i * dim, queries + list[i] * dim, size_t(dim) * sizeof(float),
                                 cudaMemcpyDefault));
      }
    }
    sub_queries = host_queries.data();
  }
  PoolBuffer<float> device_d;
  PoolBuffer<int64_t> device_i;
  std::vector<float> host_d;
  std::vector<int64_t> host_i;
  float* sub_d;
  int64_t* sub_i;
  if (outputs_on_device) {
    device_d = PoolBuffer<float>(pool, m * k);
    device_i = PoolBuffer<int64_t>(pool, m * k);
    sub_d = device_d.get();
    sub_i = device_i.get();
  } else {
    host_d.resize(size_t(m * k));
    host_i.resize(size_t(m * k));
    sub_d = host_d.data();
    sub_i = host_i.data();
  }
  std::vector<uint8_t> flags;
  run_pass(sh, sub_queries, m, k, spec, sub_d, sub_i, spec.certify ? &flags : nullptr);

  std::vector<int64_t> still, pairs;  // pairs: (position in the subset, row of the outputs)
  for (int64_t i = 0; i < m; ++i) {
    if (spec.certify && flags[size_t(i)] == 0) {
      still.push_back(list[size_t(i)]);
    } else {
      pairs.push_back(i);
      pairs.push_back(list[size_t(i)]);
    }
  }
  const int64_t taken = static_cast<int64_t>(pairs.size() / 2);
  if (taken > 0) {
    if (outputs_on_device) {
      PoolBuffer<int64_t> pairs_device(pool, 2 * taken);
      copy_to_device(staging, device, pairs_device.get(), pairs.data(), pairs.size() * sizeof(int64_t), s0);
      launch_scatter_results(sub_d, sub_i, pairs_device.get(), taken, k, distances, ids, s0);
      QV_CUDA_CHECK(cudaStreamSynchronize(s0));
    } else {
      // Host outputs are written in place; device memory (one array of the two, or another
      // device's) row by row, a rare case.
      auto put = [&](auto* dst, const auto* src) {
        const MemoryKind kind = memory_kind(dst, device);
        const bool host = kind == MemoryKind::host_pageable || kind == MemoryKind::host_pinned;
        for (int64_t p = 0; p < taken; ++p) {
          const int64_t from = pairs[size_t(2 * p)], to = pairs[size_t(2 * p + 1)];
          if (host) {
            std::copy(src + from * k, src + (from + 1) * k, dst + to * k);
          } else {
            QV_CUDA_CHECK(cudaMemcpy(dst + to * k, src + from * k, size_t(k) * sizeof(*src), cudaMemcpyDefault));
          }
        }
      };
      put(distances, sub_d);
      put(ids, sub_i);
    }
  }
  return still;
}

// Whether a certified pass that would multiply TF32 tiles multiplies IEEE half tiles instead: twice
// TF32's rate on the tensor cores, with the same 10-bit significand, so the certificate bounds the
// rounding alike (its residual norms taken for half). Where the fused TF32 kernel does not take the
// shape (rows of more than 128 values: tiles either way), over an index's rows whose kept statistics
// keep them within half's range once centred too (every |y_i - m_i| <= 2 max ||y|| <= 65504; queries
// beyond it fail their certificate and go to the float pass).
bool half_tiles_take(Resources& resources, int64_t dim, int64_t n, int64_t kc, const unsigned* kept_base_stats) {
  if (!fp16_certified_on.load(std::memory_order_relaxed) || kept_base_stats == nullptr ||
      tf32_select_fits(resources.limits(), dim, std::min(kc, kTf32SelectMaxK), n))
    return false;
  unsigned bits = 0;
  QV_CUDA_CHECK(cudaMemcpyAsync(&bits, kept_base_stats, sizeof bits, cudaMemcpyDeviceToHost, resources.stream(0)));
  QV_CUDA_CHECK(cudaStreamSynchronize(resources.stream(0)));
  float max_norm2 = 0.f;
  std::memcpy(&max_norm2, &bits, sizeof max_norm2);
  return max_norm2 <= 32752.f * 32752.f;
}

// gpu.h's knn; kept_base_stats, half_rows: Shared's.
void knn_search(Resources& resources, Metric metric, const float* base, const float* base_norms, int64_t n,
                int64_t dim, const float* queries, int64_t nq, int64_t k, float* distances, int64_t* ids,
                const RowFilter& filter, ComputeMode mode, const unsigned* kept_base_stats,
                const HalfRows& half_rows = {}) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
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
  pass_counts = KnnPassCounts{};
  if (nq == 0) return;

  Session session(resources);
  const int device = resources.device();
  const bool l2 = metric == Metric::l2;
  if (n == 0) {
    fill_missing_results(distances, ids, nq * k, missing_distance(metric),
                         memory_kind(distances, device) == MemoryKind::device &&
                             memory_kind(ids, device) == MemoryKind::device,
                         resources.stream(0));
    session.finish();
    return;
  }

  PassSpec first;
  if (mode != ComputeMode::fp32) {
    first.kind = tile_kind(mode);
    first.kc = mode == ComputeMode::tf32 ? tf32_candidate_count(k) : knn_candidate_count(k);
  } else if (k > kMaxCertifiedK) {
    first.kind = TileKind::direct;
    first.kc = k;
  } else {
    first.kind = nq >= min_tf32_queries.load(std::memory_order_relaxed) ? TileKind::tf32 : TileKind::sgemm;
    first.kc = certified_candidate_count(k);
    first.certify = true;
    first.model = certify_model(first.kind == TileKind::tf32, l2, dim);
    // A small batch's GEMV pass over an index's 16-bit rows; the float pass takes what they leave.
    if (first.kind == TileKind::sgemm && half_rows.rows != nullptr && gemv_select_on.load(std::memory_order_relaxed) &&
        gemv_select_fits(nq, dim, first.kc)) {
      first.half_rows = true;
      first.model = half_rows_model(l2, dim);
    }
    if (first.kind == TileKind::tf32 && half_tiles_take(resources, dim, n, first.kc, kept_base_stats))
      first.kind = TileKind::fp16;  // the same model: rounded inputs, tensor-core accumulation
  }

  Shared sh;
  sh.resources = &resources;
  sh.l2 = l2;
  sh.base = base;
  sh.base_norms = base_norms;
  sh.kept_base_stats = kept_base_stats;
  sh.half_rows = half_rows;
  sh.n = n;
  sh.dim = dim;
  sh.filter = filter;
  prepare(sh, plan_tiles(resources.tile_bytes() / int64_t(sizeof(float)), nq, n, first.kc, nq).columns,
          is_half(first.kind));
  // The TF32 pass (and the SGEMM pass after it) on centred rows, where the data is far from the
  // origin; below kMinTf32Queries queries the centred copy would cost more than the search.
  if (first.certify && (first.kind == TileKind::tf32 || first.kind == TileKind::fp16) && l2) {
    centre_base(sh);
    first.centred = sh.centred;
    first.model = certify_model(true, l2, dim, sh.centred);
  }

  std::vector<uint8_t> flags;
  run_pass(sh, queries, nq, k, first, distances, ids, first.certify ? &flags : nullptr);
  KnnPassCounts counts;
  if (first.kind == TileKind::direct && mode == ComputeMode::fp32) counts.direct = nq;
  if (first.certify) {
    std::vector<int64_t> failing;
    for (int64_t q = 0; q < nq; ++q)
      if (flags[size_t(q)] == 0) failing.push_back(q);
    const int64_t certified = nq - static_cast<int64_t>(failing.size());
    int64_t& first_count = first.kind == TileKind::tf32   ? counts.tf32
                           : first.kind == TileKind::fp16 ? counts.fp16
                                                          : counts.sgemm;
    first_count = certified;
    if (first.half_rows) counts.half_rows = certified;
    // The float SGEMM (or GEMV) pass after the TF32 or half tiles, or the 16-bit rows.
    if (!failing.empty() && (first.kind == TileKind::tf32 || first.kind == TileKind::fp16 || first.half_rows)) {
      PassSpec second = first;
      second.kind = TileKind::sgemm;
      second.half_rows = false;
      second.model = certify_model(false, l2, dim, second.centred);
      const int64_t tried = static_cast<int64_t>(failing.size());
      failing = run_subset(sh, queries, failing, k, second, distances, ids);
      counts.sgemm += tried - static_cast<int64_t>(failing.size());
    }
    if (!failing.empty()) {
      PassSpec last;
      last.kind = TileKind::direct;
      last.kc = k;
      run_subset(sh, queries, failing, k, last, distances, ids);
      counts.direct = static_cast<int64_t>(failing.size());
    }
  }
  counts.chunks = sh.chunks_searched;
  counts.gemv = sh.gemv_queries;
  counts.fused = sh.fused_queries;
  counts.query_tiles = sh.arriving_query_tiles;
  session.finish();
  pass_counts = counts;
}

}  // namespace

void knn(Resources& resources, Metric metric, const float* base, const float* base_norms, int64_t n,
         int64_t dim, const float* queries, int64_t nq, int64_t k, float* distances, int64_t* ids,
         const RowFilter& filter, ComputeMode mode) {
  knn_search(resources, metric, base, base_norms, n, dim, queries, nq, k, distances, ids, filter, mode, nullptr);
}

void knn(Resources& resources, Metric metric, const DeviceMatrix& base, const float* queries, int64_t nq, int64_t k,
         float* distances, int64_t* ids, const RowFilter& filter, ComputeMode mode) {
  // A small batch's GEMV pass reads the matrix's 16-bit rows, made by the first such search.
  const int64_t dim = matrix_dim(base);
  const bool small_batch = mode == ComputeMode::fp32 && nq >= 1 &&
                           nq < min_tf32_queries.load(std::memory_order_relaxed) && k >= 1 && k <= kMaxCertifiedK &&
                           gemv_select_on.load(std::memory_order_relaxed) &&
                           half_rows_on.load(std::memory_order_relaxed) &&
                           gemv_select_fits(nq, dim, certified_candidate_count(k)) &&
                           matrix_rows(base) * dim * int64_t(sizeof(float)) >= kMinHalfRowsBytes;
  const HalfRows half_rows = small_batch ? matrix_half_rows(resources, base) : HalfRows{};
  knn_search(resources, metric, matrix_data(base), matrix_norms(base), matrix_rows(base), dim, queries, nq, k,
             distances, ids, filter, mode, matrix_base_stats(base), half_rows);
}

KnnPassCounts last_knn_pass_counts() { return pass_counts; }

void set_gemv_select_enabled(bool on) { gemv_select_on.store(on, std::memory_order_relaxed); }

void set_half_rows_enabled(bool on) { half_rows_on.store(on, std::memory_order_relaxed); }

BatchPassThresholds default_batch_pass_thresholds() { return {kMinTf32Queries, kMinFusedQueries}; }

void set_batch_pass_thresholds(BatchPassThresholds thresholds) {
  min_tf32_queries.store(thresholds.min_tf32_queries, std::memory_order_relaxed);
  min_fused_queries.store(thresholds.min_fused_queries, std::memory_order_relaxed);
}

void set_fused_result_tile_bytes(int64_t bytes) {
  fused_result_tile_bytes.store(bytes > 0 ? bytes : kFusedResultTileBytes, std::memory_order_relaxed);
}

void set_fp16_certified_enabled(bool on) { fp16_certified_on.store(on, std::memory_order_relaxed); }

}  // namespace quiver::gpu
