// gpu_ivf.h's ivf_range_search: every entry of the probed lists within a radius.
//
// Per tile of queries (sized as ivf_search's, within twice the Resources' tile budget):
//   1. rotation (OPQ) and coarse quantization, as ivf_search (coarse.h);
//   2. a count kernel: one block per (query, probed list), a warp per entry computing its float32
//      distance (range_distance below), the filter applied; per query the hits are counted;
//   3. the host reads the counts (the limit on results is checked there, before anything is stored)
//      and cuts the tile into blocks of consecutive queries whose hits fit the hit budget (a block
//      holds at least one query, so one query's hits, at most the entries of its probed lists, is the
//      only unbounded part);
//   4. per block a fill kernel scans its queries again and stores each hit as one 64-bit key,
//      (orderable distance key << 32) | slot, at its query's offset; a segmented sort (the exact range
//      search's, cuda/flat/range_sort.h) orders each query's keys; the host copies them, turns slots
//      into ids (the host mirror of the ids) and orders ties of equal distance by id.
// The two scans compute the same values in the same order, so the fill stores exactly what was
// counted (its stores are bounded by the counts all the same).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpp/backend/gpu_ivf.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/flat/range_sort.h"
#include "cuda/ivf/coarse.h"
#include "cuda/ivf/ivf_device.h"
#include "cuda/ivf/ivf_kernels.h"
#include "cuda/ivf/ivf_storage.h"
#include "cuda/ivf/slot_filter.h"
#include "cuda/select/select.h"

namespace quiver::gpu {

namespace {

constexpr int kWarp = 32;
// Warps per block of the scans: a block scans one probed list, a warp an entry at a time.
constexpr int kScanWarps = 8;
// The query tile's buffers, and a block's hit buffers, may each take this many Resources tiles.
constexpr int64_t kTileBudgets = 2;
// Device bytes per stored hit: the key, its sorted copy, and about as much sort workspace.
constexpr int64_t kBytesPerHit = 24;

// What a scan reads. Exactly one source of entry vectors: `vectors` (IVF-Flat codes or raw vectors),
// else PQ codes decoded against the list's centroid.
struct RangeScan {
  const float* queries = nullptr;  // rows x dim
  int64_t dim = 0;
  const int32_t* lists = nullptr;  // rows x nprobe
  int64_t nprobe = 0;
  const int32_t* list_offset = nullptr;
  const int32_t* list_size = nullptr;
  const float* vectors = nullptr;  // slots x dim
  const uint8_t* codes = nullptr;  // slots x code_stride (PQ)
  int64_t code_stride = 0;
  const float* centroids = nullptr;  // nlist x dim (PQ)
  const float* codebooks = nullptr;  // m x 256 x dsub (PQ)
  int64_t dsub = 0;
  bool l2 = true;
  float threshold = 0;                   // a hit's key (smaller-is-closer) is below it
  const uint32_t* slot_filter = nullptr;  // allowed slots, or null
  int64_t row0 = 0;                       // the first row this launch scans
  uint32_t* counts = nullptr;             // count pass: per row of the tile
  const int64_t* offsets = nullptr;       // fill pass: per row - row0, rows + 1 entries
  uint32_t* cursor = nullptr;             // fill pass: per row - row0, zeroed
  uint64_t* keys = nullptr;               // fill pass: at offsets
};

// Float keys as unsigned integers of the same order (finite keys; -0 was made +0).
__device__ __forceinline__ uint32_t orderable(float key) {
  const uint32_t u = __float_as_uint(key);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// The entry's key, smaller-is-closer, the same in every lane: lane j sums terms j, j + 32, ... in
// order with fused multiply-adds, then a butterfly adds the lanes' sums.
__device__ __forceinline__ float range_key(const RangeScan& s, const float* x, int32_t list, int64_t slot, int lane) {
  float sum = 0.f;
  if (s.vectors != nullptr) {
    const float* y = s.vectors + slot * s.dim;
    for (int64_t i = lane; i < s.dim; i += kWarp) {
      const float xi = x[i], yi = y[i];
      if (s.l2) {
        const float d = xi - yi;
        sum = fmaf(d, d, sum);
      } else {
        sum = fmaf(xi, yi, sum);
      }
    }
  } else {
    const uint8_t* code = s.codes + slot * s.code_stride;
    const float* c = s.centroids + int64_t(list) * s.dim;
    for (int64_t i = lane; i < s.dim; i += kWarp) {
      const int64_t m = i / s.dsub;
      const float yi = c[i] + s.codebooks[(m * 256 + code[m]) * s.dsub + (i - m * s.dsub)];
      const float xi = x[i];
      if (s.l2) {
        const float d = xi - yi;
        sum = fmaf(d, d, sum);
      } else {
        sum = fmaf(xi, yi, sum);
      }
    }
  }
  for (int o = kWarp / 2; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  return (s.l2 ? sum : -sum) + 0.f;  // + 0: -0 becomes +0, so equal keys have equal bits
}

// Block b scans row row0 + b / nprobe's probed list b % nprobe. fill: store the hits, else count.
template <bool kFill>
__global__ void __launch_bounds__(kScanWarps* kWarp) range_scan_kernel(RangeScan s) {
  const int64_t local = int64_t(blockIdx.x) / s.nprobe;
  const int64_t row = s.row0 + local;
  const int32_t list = s.lists[row * s.nprobe + int64_t(blockIdx.x) % s.nprobe];
  if (list < 0) return;
  const int64_t first = s.list_offset[list], size = s.list_size[list];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const float* x = s.queries + row * s.dim;
  uint32_t found = 0;
  for (int64_t e = warp; e < size; e += kScanWarps) {
    const int64_t slot = first + e;
    if (s.slot_filter != nullptr && !((s.slot_filter[slot >> 5] >> (slot & 31)) & 1u)) continue;
    const float key = range_key(s, x, list, slot, lane);
    if (!(key < s.threshold)) continue;
    if (kFill) {
      if (lane == 0) {
        const int64_t room = s.offsets[local + 1] - s.offsets[local];
        const uint32_t at = atomicAdd(&s.cursor[local], 1u);
        if (int64_t(at) < room)
          s.keys[s.offsets[local] + at] = (uint64_t(orderable(key)) << 32) | uint64_t(uint32_t(slot));
      }
    } else {
      ++found;
    }
  }
  if (!kFill && lane == 0 && found > 0) atomicAdd(&s.counts[row], found);
}

void launch_range_scan(const RangeScan& s, int64_t rows, bool fill, cudaStream_t stream) {
  const int64_t blocks = rows * s.nprobe;
  if (blocks == 0) return;
  if (fill) {
    range_scan_kernel<true><<<unsigned(blocks), kScanWarps * kWarp, 0, stream>>>(s);
    QV_LAUNCH_CHECK("range_scan_kernel<fill>");
  } else {
    range_scan_kernel<false><<<unsigned(blocks), kScanWarps * kWarp, 0, stream>>>(s);
    QV_LAUNCH_CHECK("range_scan_kernel<count>");
  }
}

float key_of_bits(uint32_t u) {
  const uint32_t bits = (u & 0x80000000u) ? (u & 0x7fffffffu) : ~u;
  float key;
  std::memcpy(&key, &bits, sizeof key);
  return key;
}

}  // namespace

IvfRangeHits ivf_range_search(Resources& resources, const IvfDevice& ivf, int64_t nq, const float* queries,
                              float radius, const IvfSearchOptions& options, int64_t max_results) {
  DeviceScope device_scope(resources.device());
  check_ivf_device(resources, ivf);
  require(nq >= 0, "nq = ", nq, " is negative");
  require(!std::isnan(radius), "radius is NaN");
  require(max_results >= 0, "max_results = ", max_results, " is negative");
  require(options.nprobe >= 1 && options.nprobe <= ivf.nlist, "nprobe = ", options.nprobe, " is outside 1 .. ",
          ivf.nlist);
  require(options.filter_nbits >= 0, "filter_nbits = ", options.filter_nbits, " is negative");
  require(nq == 0 || queries != nullptr, "queries must not be null");
  const int64_t nprobe = options.nprobe;
  if (nprobe > kMaxSelectK && nprobe < ivf.nlist)
    fail(Status::unsupported, "nprobe = ", nprobe, " is above ", kMaxSelectK, " (and below nlist = ", ivf.nlist, ")");

  IvfRangeHits hits;
  hits.lims.assign(static_cast<size_t>(nq + 1), 0);
  if (nq == 0 || ivf.count == 0) return hits;

  Session session(resources);
  const int device = resources.device();
  DevicePool& pool = resources.pool();
  HostStaging& staging = resources.staging();
  cudaStream_t stream = resources.stream(0);
  const bool l2 = ivf.l2();
  const bool queries_on_device = memory_kind(queries, device) == MemoryKind::device;
  // Keys are smaller-is-closer; a hit is a key <= the radius's, i.e. below the next float up
  // (cpp/index/ivf_range.cpp's test).
  const float key_radius = l2 ? radius : -radius;
  const float threshold = std::nextafter(key_radius, std::numeric_limits<float>::infinity());
  // Exact distances to the raw vectors (caller space) for IVF-PQ keeping them; IVF-Flat's stored
  // vectors are in the rotated space.
  const bool raw_queries = !ivf.flat() && ivf.keep_raw;

  // ---- the plan ----
  int64_t per_query = coarse_tile_floats(ivf, 1) * 4 + nprobe * 8 + ivf.dim * 4 + 32;
  if (ivf.rotated) per_query += ivf.dim * 4;
  const int64_t tq = std::clamp<int64_t>(kTileBudgets * resources.tile_bytes() / per_query, 1, nq);
  const int64_t hit_budget = std::max<int64_t>(1, kTileBudgets * resources.tile_bytes() / kBytesPerHit);

  // ---- inputs ----
  PoolBuffer<uint32_t> slot_filter =
      upload_slot_filter(resources, ivf, options.filter_bits, options.filter_nbits, stream);

  // ---- buffers of a tile ----
  PoolBuffer<float> query_tile, rotated, coarse_keys;
  if (!queries_on_device) query_tile = PoolBuffer<float>(pool, tq * ivf.dim);
  if (ivf.rotated) rotated = PoolBuffer<float>(pool, tq * ivf.dim);
  PoolBuffer<float> tile(pool, coarse_tile_floats(ivf, tq));
  PoolBuffer<char> coarse_ws(pool, coarse_workspace_bytes(resources, ivf, tq, nprobe));
  coarse_keys = PoolBuffer<float>(pool, tq * nprobe);
  PoolBuffer<int32_t> lists(pool, tq * nprobe);
  PoolBuffer<uint32_t> counts(pool, tq), cursor(pool, tq);
  PoolBuffer<int64_t> offsets(pool, tq + 1);
  std::vector<uint32_t> host_counts(static_cast<size_t>(tq));
  std::vector<int64_t> block_offsets;
  std::vector<uint64_t> host_keys;

  RangeScan scan;
  scan.dim = ivf.dim;
  scan.lists = lists.get();
  scan.nprobe = nprobe;
  scan.list_offset = ivf.offset_dev.get();
  scan.list_size = ivf.size_dev.get();
  if (ivf.flat()) {
    scan.vectors = reinterpret_cast<const float*>(ivf.arena.codes.get());
  } else if (raw_queries) {
    scan.vectors = ivf.raw_vectors();
  } else {
    scan.codes = ivf.arena.codes.get();
    scan.code_stride = ivf.code_stride;
    scan.centroids = ivf.centroids.get();
    scan.codebooks = ivf.codebooks.get();
    scan.dsub = ivf.dsub;
  }
  scan.l2 = l2;
  scan.threshold = threshold;
  scan.slot_filter = slot_filter.get();
  scan.counts = counts.get();
  scan.offsets = offsets.get();
  scan.cursor = cursor.get();

  for (int64_t q0 = 0; q0 < nq; q0 += tq) {
    const int64_t rows = std::min(tq, nq - q0);
    const float* x = queries + q0 * ivf.dim;
    if (!queries_on_device) {
      copy_to_device(staging, device, query_tile.get(), x, size_t(rows * ivf.dim) * sizeof(float), stream);
      x = query_tile.get();
    }
    const float* xr = x;
    if (ivf.rotated) {
      rotate_rows(resources.blas(0), ivf.rotation.get(), ivf.dim, x, rows, rotated.get());
      xr = rotated.get();
    }
    coarse_search(resources, 0, ivf, rows, xr, nprobe, tile.get(), coarse_ws.get(), coarse_keys.get(), lists.get());
    scan.queries = raw_queries ? x : xr;

    // Count.
    QV_CUDA_CHECK(cudaMemsetAsync(counts.get(), 0, size_t(rows) * sizeof(uint32_t), stream));
    scan.row0 = 0;
    launch_range_scan(scan, rows, false, stream);
    copy_from_device(staging, device, host_counts.data(), counts.get(), size_t(rows) * sizeof(uint32_t), stream);
    for (int64_t r = 0; r < rows; ++r) {
      if (max_results > 0 && int64_t(host_counts[r]) > max_results)
        fail(Status::too_many_results, "range search: query ", q0 + r, " has ", host_counts[r],
             " hits, more than max_range_results = ", max_results, " (use a smaller radius or a larger limit)");
      hits.lims[size_t(q0 + r + 1)] = hits.lims[size_t(q0 + r)] + int64_t(host_counts[r]);
    }
    const int64_t tile_hits = hits.lims[size_t(q0 + rows)] - hits.lims[size_t(q0)];
    if (tile_hits == 0) continue;
    hits.ids.resize(size_t(hits.lims[size_t(q0 + rows)]));
    hits.distances.resize(size_t(hits.lims[size_t(q0 + rows)]));

    // Fill, block by block of queries whose hits fit the budget.
    for (int64_t r0 = 0; r0 < rows;) {
      int64_t r1 = r0 + 1;
      int64_t block_hits = host_counts[r0];
      while (r1 < rows && block_hits + int64_t(host_counts[r1]) <= hit_budget) block_hits += host_counts[r1++];
      if (block_hits == 0) {
        r0 = r1;
        continue;
      }
      const int64_t block_rows = r1 - r0;
      block_offsets.assign(size_t(block_rows + 1), 0);
      for (int64_t r = r0; r < r1; ++r) block_offsets[size_t(r - r0 + 1)] = block_offsets[size_t(r - r0)] + host_counts[r];
      copy_to_device(staging, device, offsets.get(), block_offsets.data(), block_offsets.size() * sizeof(int64_t),
                     stream);
      QV_CUDA_CHECK(cudaMemsetAsync(cursor.get(), 0, size_t(block_rows) * sizeof(uint32_t), stream));
      PoolBuffer<uint64_t> keys(pool, block_hits), sorted(pool, block_hits);
      const size_t sort_bytes = range_sort_workspace_bytes(block_hits, block_rows);
      PoolBuffer<char> sort_ws(pool, int64_t(std::max<size_t>(sort_bytes, 1)));
      scan.row0 = r0;
      scan.keys = keys.get();
      launch_range_scan(scan, block_rows, true, stream);
      range_sort(sort_ws.get(), sort_bytes, keys.get(), sorted.get(), block_hits, block_rows, offsets.get(), stream);
      host_keys.resize(size_t(block_hits));
      copy_from_device(staging, device, host_keys.data(), sorted.get(), size_t(block_hits) * sizeof(uint64_t), stream);

      // Slots become ids; a run of equal keys is ordered by id.
      const int64_t base = hits.lims[size_t(q0 + r0)];
      for (int64_t r = 0; r < block_rows; ++r) {
        const int64_t b = block_offsets[size_t(r)], e = block_offsets[size_t(r + 1)];
        for (int64_t i = b; i < e;) {
          int64_t j = i + 1;
          while (j < e && (host_keys[size_t(j)] >> 32) == (host_keys[size_t(i)] >> 32)) ++j;
          const float key = key_of_bits(uint32_t(host_keys[size_t(i)] >> 32));
          for (int64_t t = i; t < j; ++t) {
            hits.ids[size_t(base + t)] = ivf.host_ids[size_t(host_keys[size_t(t)] & 0xffffffffu)];
            hits.distances[size_t(base + t)] = l2 ? key : 0.f - key;  // 0 - key: a zero similarity is +0
          }
          if (j - i > 1) std::sort(hits.ids.begin() + (base + i), hits.ids.begin() + (base + j));
          i = j;
        }
      }
      r0 = r1;
    }
  }
  session.finish();
  return hits;
}

}  // namespace quiver::gpu
