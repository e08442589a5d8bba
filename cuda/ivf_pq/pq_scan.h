// IVF-PQ list scanning (the paper's §5.2-5.3, reorganised): one block per (query, chunk of its row)
// builds the query's look-up table in shared memory and estimates the distance of every entry of the
// query's probed lists in that chunk by pq_m table look-ups. The estimates either go into the
// query's row of distances (launch_pq_scan; row_select.h selects from there) or, for up to
// kMaxPqScanSelectK candidates, straight into WarpSelect queues (launch_pq_scan_select: the block's
// 8 warps keep queues in registers and merge them at the end), so no distance row is written.
//
// The L2 estimate ||x - c - r||^2 (c the list's centroid, r the decoded residual) is split as the
// paper's eq. 11:  ||x - c||^2 (term 2, from the coarse quantizer)  +  ||r||^2 + 2 <c, r> (term 1)
// - 2 <x, r> (term 3). Term 1 depends on the entry alone, so it is precomputed once per entry when
// the entry is added (entry_terms, one float per slot) instead of as |C1| x 256 x M tables; term 3
// is one table per query (alpha <x_m, q2_mc>, alpha = -2), the same for every probed list, so a
// block builds its table once, from the query and the codebooks (128 KB for d = 128, resident in
// L2: no table goes through device memory), and scans all of the query's lists with it. Inner
// product: -<x, c> (coarse key) + sum of -<x_m, q2_mc> (alpha = -1).
//
// One thread estimates one entry at a time. For M = 32, and M = 64 with fp16/bf16, each lane takes
// its sub-quantizers in a rotated order over a table laid out so a warp's 32 look-ups hit 32
// different banks (pq_scan_kernel.cuh), instead of the ~3.5-way conflicts of random codes; other M
// scan the plain table. (Tried: M / 8 lanes per entry over a transposed table: slower, by its extra
// instructions and reductions.)
//
// Tables are float32 in shared memory (opt-in beyond 48 KB: M = 96 takes 96 KB), or, with fp16/bf16,
// 16-bit fixed point for M = 64 and otherwise float16: then each sub-quantizer's part is offset by a
// lower bound of its entries and scaled so the widest bound fits 0 .. 65535 (fixed point) or below
// half's 65 504. The bounds come from the codebooks' centres and radii (pq_tables.h):
// alpha <x_m, q2_mc> lies within alpha <x_m, centre_m> +- |alpha| ||x_m|| radius_m. Sums are
// accumulated exactly (fixed point) or in float32 and scaled back. No table overflows whatever the
// data's magnitude (Fashion-MNIST's raw pixels included).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/ivf/row_select.h"

namespace quiver::gpu {

// The largest number of candidates the selecting scan keeps (its largest WarpSelect queue).
constexpr int64_t kMaxPqScanSelectK = 128;

struct PqScanParams {
  int64_t rows = 0;
  int64_t nprobe = 0;
  int64_t chunks = 1;     // per query row
  int64_t chunk_len = 0;  // row positions per chunk
  const int32_t* lists = nullptr;        // rows x nprobe
  const float* coarse_keys = nullptr;    // rows x nprobe (coarse.h's keys)
  const float* queries = nullptr;        // rows x dim (rotated space)
  int64_t dim = 0;
  bool l2 = true;
  const int32_t* list_offset = nullptr;  // per list
  const int32_t* list_size = nullptr;
  const uint8_t* codes = nullptr;  // arena codes, code_stride bytes per slot
  int64_t code_stride = 0;
  int64_t m = 0;
  int64_t dsub = 0;                    // dim / m
  const float* codebooks = nullptr;    // m x 256 x dsub
  const float* bounds = nullptr;       // launch_pq_codebook_bounds' output (pq_tables.h; 16-bit tables)
  const float* entry_terms = nullptr;  // per slot (L2), or null
  bool half_tables = false;
  // launch_pq_scan: the estimates, row r at dist + r * row_stride.
  float* dist = nullptr;
  int64_t row_stride = 0;
  // launch_pq_scan_select: the k (<= kMaxPqScanSelectK) best of each (row, chunk), closest first,
  // ties to the smaller slot, filter applied; as results (final.distances set, chunks == 1) or as
  // candidates at out_keys / out_slots + (row * chunks + chunk) * k (row_select.h's conventions).
  int64_t k = 0;
  const uint32_t* slot_filter = nullptr;
  RowSelectFinal final;
  float* out_keys = nullptr;
  int32_t* out_slots = nullptr;
};

// Shared memory a block needs (code_stride: the arena's); the caller checks it against the limit.
int64_t pq_scan_shared_bytes(int64_t m, int64_t dsub, int64_t code_stride, bool half_tables);

void launch_pq_scan(const PqScanParams& p, cudaStream_t stream);
void launch_pq_scan_select(const PqScanParams& p, cudaStream_t stream);

}  // namespace quiver::gpu
