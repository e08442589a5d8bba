// gpu_ivf.h's ivf_search: the paper's Algorithm 4, batched and tiled over queries.
//
// Per tile of queries (sized so the tile's buffers stay within twice the Resources' tile budget):
//   1. rotation (OPQ) of the queries;
//   2. coarse quantization: SGEMM against the centroids + k-selection of the nprobe closest lists;
//   3. the scan writes every probed entry's key into its query's row of distances (one segment per
//      probed list, entries in slot order): IVF-Flat list-major as small GEMMs or, for small
//      batches, directly (cuda/ivf_flat); IVF-PQ by table look-ups (cuda/ivf_pq);
//   4. k-selection over the rows, filter applied (row_select.h; two passes when rows are few and
//      long); when it is the last step it writes the results itself. IVF-PQ with up to
//      kMaxPqScanSelectK candidates selects inside its scan instead (no rows of distances);
//   5. optional re-ranking of refine_k candidates with exact float32 distances to the raw vectors,
//      then the k best of them;
//   6. slots become ids (device ids, or on the host with ids_on_host) and keys distances.
// Everything runs on stream 0 but the copies: host queries go up a tile at a time on the copy stream
// into one of two buffers, so the next tile's copy overlaps this tile's search (the first tile in
// pieces, each coarse-searched as it lands); the only host synchronisations are the copies of
// results: with device ids, each tile's go to the caller on the copy stream while the next tile is
// computed. Host rows the caller left unchecked are checked a tile at a time while the device works.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpp/backend/gpu_ivf.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/flat/compute_modes.h"
#include "cuda/flat/kernels.h"
#include "cuda/ivf/coarse.h"
#include "cuda/ivf/ivf_device.h"
#include "cuda/ivf/ivf_kernels.h"
#include "cuda/ivf/ivf_storage.h"
#include "cuda/ivf/row_select.h"
#include "cuda/ivf/slot_filter.h"
#include "cuda/ivf_flat/flat_scan.h"
#include "cuda/ivf_pq/pq_scan.h"
#include "cuda/ivf_pq/pq_tables.h"

namespace quiver::gpu {

namespace {

// PQ scan blocks wanted per multiprocessor; query rows are cut into chunks (of at least kMinPqChunk
// positions) when the queries alone are fewer.
constexpr int64_t kPqBlocksPerSm = 8;
constexpr int64_t kMinPqChunk = 512;
// The query tile's buffers may take this many Resources tiles.
constexpr int64_t kTileBudgets = 2;
// IVF-PQ with host queries: a batch is cut into this many tiles (of at least kMinUploadTileRows
// queries) so their uploads overlap the search. (IVF-Flat's list-major GEMMs lose more from smaller
// tiles than the overlap gains: synthetic IVF1024,Flat nprobe 4 went 2.96M -> 1.98M QPS.)
constexpr int64_t kUploadTiles = 4;
constexpr int64_t kMinUploadTileRows = 2048;
// The first tile of host queries goes up in up to this many pieces of at least kMinFirstPieceRows
// queries, each coarse-searched once it lands: the device starts after the first piece's copy, not
// the whole tile's (tiles of 12 500 queries: 0.25 ms of copy alone, twice that with four GPUs
// copying at once).
constexpr int64_t kFirstTilePieces = 4;
constexpr int64_t kMinFirstPieceRows = 1024;
// Resources' events recorded when a query tile's results are final (this one and the next,
// alternating), and when a tile's host queries are on the device (likewise); an IVF search uses no
// others.
constexpr int kTileDoneEvent = 1;
constexpr int kQueriesUpEvent = 3;
static_assert(kQueriesUpEvent + 1 < Resources::kEvents, "Resources::kEvents");

int64_t align_floats(int64_t n) { return (n + 63) / 64 * 64; }

struct SearchPlan {
  int64_t tile_rows = 0;
  int64_t row_bound = 0;
  int64_t kk = 0;  // candidates the selection keeps: k, or refine_k
  bool refine = false;
  bool half_tables = false;
  bool scan_selects = false;  // IVF-PQ selecting inside its scan (steps 3 and 4 in one kernel)
  int64_t pq_chunks = 1;
};

// Device bytes per query of a tile.
int64_t bytes_per_query(const IvfDevice& ivf, const SearchPlan& plan, int64_t nprobe, int64_t k) {
  int64_t b = coarse_tile_floats(ivf, 1) * 4 + nprobe * 12 + 16;
  if (!plan.scan_selects) b += plan.row_bound * 4;  // the row of distances
  if (ivf.rotated) b += ivf.dim * 4;
  b += plan.kk * 8 * (1 + plan.pq_chunks);  // selection results and a chunked pass's
  if (plan.refine) b += plan.kk * 4 + k * 8;
  b += k * 12;  // results
  return b;
}

}  // namespace

void ivf_search(Resources& resources, const IvfDevice& ivf, int64_t nq, const float* queries, int64_t k,
                const IvfSearchOptions& options, float* distances, int64_t* ids) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  check_ivf_device(resources, ivf);
  require(nq >= 0, "nq = ", nq, " is negative");
  require(k >= 1 && k <= kMaxSelectK, "k = ", k, " is outside 1 .. ", kMaxSelectK);
  require(options.nprobe >= 1 && options.nprobe <= ivf.nlist, "nprobe = ", options.nprobe, " is outside 1 .. ",
          ivf.nlist);
  require(options.refine_k == 0 || ivf.keep_raw, "refine_k = ", options.refine_k,
          ": the index keeps no raw vectors to re-rank with");
  require(options.refine_k == 0 || (options.refine_k >= k && options.refine_k <= kMaxSelectK), "refine_k = ",
          options.refine_k, " is outside k = ", k, " .. ", kMaxSelectK);
  require(options.filter_nbits >= 0, "filter_nbits = ", options.filter_nbits, " is negative");
  require(options.mode == ComputeMode::fp32 || options.mode == ComputeMode::tf32 ||
              options.mode == ComputeMode::fp16 || options.mode == ComputeMode::bf16,
          "mode: ", static_cast<int32_t>(options.mode), " is not fp32, tf32, fp16 or bf16");
  require(nq == 0 || (queries != nullptr && distances != nullptr && ids != nullptr),
          "queries, distances and ids must not be null");
  if (nq == 0) return;
  const int64_t nprobe = options.nprobe;
  if (nprobe > kMaxSelectK && nprobe < ivf.nlist)
    fail(Status::unsupported, "nprobe = ", nprobe, " is above ", kMaxSelectK, " (and below nlist = ", ivf.nlist, ")");

  Session session(resources);
  const int device = resources.device();
  DevicePool& pool = resources.pool();
  HostStaging& staging = resources.staging();
  cudaStream_t stream = resources.stream(0);
  const bool l2 = ivf.l2();
  const bool queries_on_device = memory_kind(queries, device) == MemoryKind::device;
  const bool distances_on_device = memory_kind(distances, device) == MemoryKind::device;
  const bool ids_on_device = memory_kind(ids, device) == MemoryKind::device;
  const bool outputs_on_device = distances_on_device && ids_on_device;

  if (ivf.count == 0) {
    if (options.check_rows) options.check_rows(0, nq);
    fill_missing_results(distances, ids, nq * k, missing_distance(ivf.metric), outputs_on_device, stream);
    session.finish();
    return;
  }

  // ---- the plan ----
  SearchPlan plan;
  plan.refine = options.refine_k > 0;
  plan.kk = plan.refine ? options.refine_k : k;
  plan.row_bound = ivf.row_bound(nprobe);
  if (!ivf.flat()) {
    plan.half_tables = options.mode == ComputeMode::fp16 || options.mode == ComputeMode::bf16;
    plan.scan_selects = plan.kk <= kMaxPqScanSelectK;
    // Query rows are cut into chunks when the queries alone are too few blocks.
    const int64_t target = int64_t(resources.limits().sm_count) * kPqBlocksPerSm;
    const int64_t most = std::max<int64_t>(1, plan.row_bound / kMinPqChunk);
    plan.pq_chunks = std::clamp<int64_t>((target + nq - 1) / nq, 1, most);
  }
  const int64_t per_query = bytes_per_query(ivf, plan, nprobe, k);
  plan.tile_rows = std::clamp<int64_t>(kTileBudgets * resources.tile_bytes() / per_query, 1, nq);
  if (plan.scan_selects && !queries_on_device)
    plan.tile_rows = std::min(plan.tile_rows, std::max(kMinUploadTileRows, (nq + kUploadTiles - 1) / kUploadTiles));
  const int64_t tiles = (nq + plan.tile_rows - 1) / plan.tile_rows;
  plan.tile_rows = (nq + tiles - 1) / tiles;
  const int64_t tq = plan.tile_rows;
  const RowSelectPlan select_plan = plan_row_select(resources.limits(), tq, plan.row_bound, plan.kk);

  PqScanParams pq;
  PoolBuffer<float> codebook_bounds;
  if (!ivf.flat()) {
    pq.nprobe = nprobe;
    pq.chunks = plan.pq_chunks;
    pq.chunk_len = std::max<int64_t>(1, (plan.row_bound + pq.chunks - 1) / pq.chunks);
    pq.list_offset = ivf.offset_dev.get();
    pq.list_size = ivf.size_dev.get();
    pq.codes = ivf.arena.codes.get();
    pq.code_stride = ivf.code_stride;
    pq.dim = ivf.dim;
    pq.l2 = l2;
    pq.m = ivf.pq_m;
    pq.dsub = ivf.dsub;
    pq.codebooks = ivf.codebooks.get();
    pq.entry_terms = l2 ? ivf.arena.norms.get() : nullptr;
    pq.half_tables = plan.half_tables;
    pq.row_stride = plan.row_bound;
    pq.k = plan.kk;
    const int64_t shared = pq_scan_shared_bytes(ivf.pq_m, ivf.dsub, ivf.code_stride, plan.half_tables);
    if (shared > resources.limits().max_shared_bytes)
      fail(Status::unsupported, "IVF-PQ look-up tables of ", shared, " bytes exceed the device's shared memory (",
           resources.limits().max_shared_bytes, " bytes a block)", plan.half_tables ? "" : "; try fp16 tables");
    if (plan.half_tables) {
      codebook_bounds = PoolBuffer<float>(pool, pq_codebook_bounds_floats(ivf.pq_m, ivf.dsub));
      launch_pq_codebook_bounds(ivf.codebooks.get(), ivf.pq_m, ivf.dsub, codebook_bounds.get(), stream);
      pq.bounds = codebook_bounds.get();
    }
  }

  // ---- inputs ----
  // Host queries are uploaded a tile at a time into two buffers in turn: tile t's copy waits for the
  // end of tile t - 2, the last reader of its buffer, and runs while tile t - 1 is searched.
  PoolBuffer<float> query_tiles[2];
  if (!queries_on_device)
    for (auto& buffer : query_tiles) buffer = PoolBuffer<float>(pool, tq * ivf.dim);
  PoolBuffer<uint32_t> slot_filter =
      upload_slot_filter(resources, ivf, options.filter_bits, options.filter_nbits, stream);

  // ---- buffers of a tile ----
  PoolBuffer<float> rotated, query_norms, tile, coarse_keys, dist, chunk_keys, cand_keys, rerank_keys, final_keys;
  PoolBuffer<int32_t> lists, seg, chunk_slots, cand_slots, final_slots;
  if (ivf.rotated) rotated = PoolBuffer<float>(pool, tq * ivf.dim);
  query_norms = PoolBuffer<float>(pool, tq);
  tile = PoolBuffer<float>(pool, coarse_tile_floats(ivf, tq));
  PoolBuffer<char> coarse_ws(pool, coarse_workspace_bytes(resources, ivf, tq, nprobe));
  coarse_keys = PoolBuffer<float>(pool, tq * nprobe);
  lists = PoolBuffer<int32_t>(pool, tq * nprobe);
  if (ivf.flat()) seg = PoolBuffer<int32_t>(pool, tq * nprobe);
  PoolBuffer<char> scan_ws, select_ws;
  if (ivf.flat()) scan_ws = PoolBuffer<char>(pool, flat_scan_workspace_bytes(tq, nprobe, ivf.nlist));
  if (plan.scan_selects) {
    if (plan.pq_chunks > 1) {
      chunk_keys = PoolBuffer<float>(pool, tq * plan.pq_chunks * plan.kk);
      chunk_slots = PoolBuffer<int32_t>(pool, tq * plan.pq_chunks * plan.kk);
      select_ws = PoolBuffer<char>(pool, merge_chunks_workspace_bytes(resources.limits(), tq, plan.pq_chunks, plan.kk));
    }
  } else {
    dist = PoolBuffer<float>(pool, align_floats(tq * plan.row_bound));
    select_ws = PoolBuffer<char>(pool, select_plan.workspace_bytes);
  }
  cand_keys = PoolBuffer<float>(pool, tq * plan.kk);
  cand_slots = PoolBuffer<int32_t>(pool, tq * plan.kk);
  PoolBuffer<char> refine_ws;
  if (plan.refine) {
    rerank_keys = PoolBuffer<float>(pool, tq * plan.kk);
    final_keys = PoolBuffer<float>(pool, tq * k);
    final_slots = PoolBuffer<int32_t>(pool, tq * k);
    refine_ws = PoolBuffer<char>(pool, select_workspace_bytes<int32_t>(resources.limits(), tq, plan.kk, k));
  }
  // Results go straight to device outputs; otherwise to one device buffer (ids, then distances),
  // copied out a tile at a time (device ids) or at the end (host ids).
  const bool direct = outputs_on_device && !ivf.ids_on_host;
  const int64_t results = nq * k;
  PoolBuffer<char> packed;
  float* result_d = distances;
  int64_t* result_i = ids;
  if (!direct) {
    packed = PoolBuffer<char>(pool, results * int64_t(sizeof(int64_t) + sizeof(float)));
    result_i = reinterpret_cast<int64_t*>(packed.get());
    result_d = reinterpret_cast<float*>(packed.get() + results * int64_t(sizeof(int64_t)));
  }
  const bool download_tiles = !direct && !ivf.ids_on_host;
  // Tiles end with an event when their results are copied out one at a time, their progress is
  // reported or their query buffer is reused.
  const bool finish_tiles = download_tiles || (direct && options.rows_done);
  const bool tile_events = finish_tiles || !queries_on_device;
  cudaStream_t copy_stream = resources.stream(Resources::kCopyStream);
  auto tile_done = [&](int64_t t) { return resources.event(kTileDoneEvent + int(t & 1)); };
  // Once tile t's last kernel is done (the device working on what was queued after it): its results
  // to the caller (through staging if pageable), then the rows done so far reported.
  auto finish_tile = [&](int64_t t) {
    const int64_t q0 = t * tq, rows = std::min(tq, nq - q0);
    const cudaEvent_t done = tile_done(t);
    if (download_tiles) {
      download_result_rows(staging, device, copy_stream, done, distances, ids, result_d, result_i, q0, rows, k);
    } else {
      QV_CUDA_CHECK(cudaEventSynchronize(done));
    }
    if (options.rows_done) options.rows_done(q0 + rows);
  };

  // Rows [r0, r1) of the tile (queries x, on the device) rotated and coarse-searched on stream 0.
  auto coarse_rows = [&](const float* x, int64_t r0, int64_t r1) {
    const float* xr = x + r0 * ivf.dim;
    if (ivf.rotated) {
      rotate_rows(resources.blas(0), ivf.rotation.get(), ivf.dim, xr, r1 - r0, rotated.get() + r0 * ivf.dim);
      xr = rotated.get() + r0 * ivf.dim;
    }
    coarse_search(resources, 0, ivf, r1 - r0, xr, nprobe, tile.get(), coarse_ws.get(), coarse_keys.get() + r0 * nprobe,
                  lists.get() + r0 * nprobe);
  };

  for (int64_t q0 = 0; q0 < nq; q0 += tq) {
    const int64_t t = q0 / tq, rows = std::min(tq, nq - q0);
    const float* x = queries + q0 * ivf.dim;
    if (queries_on_device) {
      coarse_rows(x, 0, rows);
    } else {
      // Into the tile's buffer on the copy stream, a piece at a time (several only for the first
      // tile), each piece's rows coarse-searched once it is there.
      float* buffer = query_tiles[t & 1].get();
      const cudaEvent_t up = resources.event(kQueriesUpEvent + int(t & 1));
      if (t >= 2) QV_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, tile_done(t - 2), 0));
      const int64_t pieces = t == 0 ? std::clamp<int64_t>(rows / kMinFirstPieceRows, 1, kFirstTilePieces) : 1;
      for (int64_t p = 0; p < pieces; ++p) {
        const int64_t r0 = p * rows / pieces, r1 = (p + 1) * rows / pieces;
        copy_to_device(staging, device, buffer + r0 * ivf.dim, x + r0 * ivf.dim,
                       size_t((r1 - r0) * ivf.dim) * sizeof(float), copy_stream);
        QV_CUDA_CHECK(cudaEventRecord(up, copy_stream));
        QV_CUDA_CHECK(cudaStreamWaitEvent(stream, up, 0));  // waits for this record, whatever comes later
        coarse_rows(buffer, r0, r1);
      }
      x = buffer;
    }
    const float* xr = ivf.rotated ? rotated.get() : x;

    // Without re-ranking, the selection writes the results itself when it takes one pass.
    RowSelectFinal last;
    last.distances = result_d + q0 * k;
    last.ids = result_i + q0 * k;
    last.queries = ivf.flat() && l2 ? xr : nullptr;  // IVF-Flat's L2 keys lack ||x||^2
    last.dim = ivf.dim;
    last.l2 = l2;
    last.slot_ids = ivf.ids_on_host ? nullptr : ivf.arena.ids.get();
    bool done = false;
    if (ivf.flat()) {
      FlatScanParams fs;
      fs.rows = rows;
      fs.nprobe = nprobe;
      fs.lists = lists.get();
      fs.seg = seg.get();
      fs.queries = xr;
      fs.dim = ivf.dim;
      fs.nlist = ivf.nlist;
      fs.max_list_size = ivf.max_list_size();
      fs.list_offset = ivf.offset_dev.get();
      fs.list_size = ivf.size_dev.get();
      fs.vectors = reinterpret_cast<const float*>(ivf.arena.codes.get());
      fs.norms = ivf.arena.norms.get();
      fs.l2 = l2;
      fs.dist = dist.get();
      fs.row_stride = plan.row_bound;
      fs.sm_count = resources.limits().sm_count;
      flat_scan(fs, scan_ws.get(), stream);
    } else {
      pq.rows = rows;
      pq.lists = lists.get();
      pq.coarse_keys = coarse_keys.get();
      pq.queries = xr;
      if (!plan.scan_selects) {
        pq.dist = dist.get();
        launch_pq_scan(pq, stream);
      } else if (pq.chunks > 1) {  // every chunk's candidates, then each row's merged
        pq.out_keys = chunk_keys.get();
        pq.out_slots = chunk_slots.get();
        pq.slot_filter = slot_filter.get();
        launch_pq_scan_select(pq, stream);
        merge_chunks(chunk_keys.get(), chunk_slots.get(), rows, pq.chunks, plan.kk, resources.limits(),
                     select_ws.get(), cand_keys.get(), cand_slots.get(), stream);
      } else {
        pq.slot_filter = slot_filter.get();
        pq.final = plan.refine ? RowSelectFinal{} : last;
        pq.out_keys = cand_keys.get();
        pq.out_slots = cand_slots.get();
        launch_pq_scan_select(pq, stream);
        done = !plan.refine;
      }
    }

    if (!plan.scan_selects) {
      RowSelectInput in;
      in.dist = dist.get();
      in.row_stride = plan.row_bound;
      in.lists = lists.get();
      in.nprobe = nprobe;
      in.list_offset = ivf.offset_dev.get();
      in.list_size = ivf.size_dev.get();
      in.slot_filter = slot_filter.get();
      in.rows = rows;
      in.k = plan.kk;
      done = row_select(in, select_plan, resources.limits(), select_ws.get(), cand_keys.get(), cand_slots.get(), stream,
                        plan.refine ? nullptr : &last);
    }
    if (!done) {
      const float* keys = cand_keys.get();
      const int32_t* slots = cand_slots.get();
      const float* norms = nullptr;
      if (plan.refine) {
        // Raw vectors are in the caller's space: the unrotated queries.
        launch_rerank(ivf.raw_vectors(), x, ivf.dim, cand_slots.get(), rows, plan.kk, l2, rerank_keys.get(), stream);
        SelectRequest<int32_t> best;
        best.keys = rerank_keys.get();
        best.ld = plan.kk;
        best.rows = rows;
        best.cols = plan.kk;
        best.k = k;
        best.ids = cand_slots.get();
        best.out_keys = final_keys.get();
        best.out_ids = final_slots.get();
        best.keep_missing_as_sentinel = true;
        select_rows(best, resources.limits(), refine_ws.get(), stream);
        keys = final_keys.get();
        slots = final_slots.get();
      } else if (ivf.flat() && l2) {
        launch_row_norms(xr, rows, ivf.dim, query_norms.get(), stream);
        norms = query_norms.get();
      }
      launch_finalize_slots(keys, slots, rows, k, norms, l2, ivf.ids_on_host ? nullptr : ivf.arena.ids.get(),
                            result_d + q0 * k, result_i + q0 * k, stream);
    }
    if (tile_events) QV_CUDA_CHECK(cudaEventRecord(tile_done(t), stream));
    if (options.check_rows) options.check_rows(q0, q0 + rows);  // beside the device's work
    if (finish_tiles && t > 0) finish_tile(t - 1);
  }

  // ---- results ----
  if (finish_tiles) {
    finish_tile((nq - 1) / tq);
  } else if (!direct) {  // slots become ids on the host
    const size_t id_bytes = size_t(results) * sizeof(int64_t), distance_bytes = size_t(results) * sizeof(float);
    std::vector<char> host(id_bytes + distance_bytes);
    copy_from_device(staging, device, host.data(), packed.get(), host.size(), stream);
    auto* host_ids = reinterpret_cast<int64_t*>(host.data());
    for (int64_t i = 0; i < results; ++i) host_ids[i] = host_ids[i] < 0 ? -1 : ivf.host_ids[size_t(host_ids[i])];
    if (ids_on_device) {
      copy_to_device(staging, device, ids, host_ids, id_bytes, stream);
    } else {
      std::memcpy(ids, host_ids, id_bytes);
    }
    if (distances_on_device) {
      copy_to_device(staging, device, distances, host.data() + id_bytes, distance_bytes, stream);
    } else {
      std::memcpy(distances, host.data() + id_bytes, distance_bytes);
    }
  }
  session.finish();
}

}  // namespace quiver::gpu
