// IVF-PQ list scanning (the paper's §5.2-5.3, reorganised): one block per (query, chunk of its row)
// holds the query's look-up table in shared memory and estimates the distance of every entry of the
// query's probed lists in that chunk by pq_m table look-ups, writing it into the query's row of
// distances (row_select.h selects from there).
//
// The L2 estimate ||x - c - r||^2 (c the list's centroid, r the decoded residual) is split as the
// paper's eq. 11:  ||x - c||^2 (term 2, from the coarse quantizer)  +  ||r||^2 + 2 <c, r> (term 1)
// - 2 <x, r> (term 3). Term 1 depends on the entry alone, so it is precomputed once per entry when
// the entry is added (entry_terms, one float per slot) instead of as |C1| x 256 x M tables; term 3
// is one table per query (term3 = -2 <x_m, q2_mc>, pq_tables.h), the same for every probed list, so
// a block builds its table once and scans all of the query's lists with it. Inner product:
// -<x, c> (coarse key) + sum of -<x_m, q2_mc>.
//
// One thread estimates one entry at a time. For M = 32, and M = 64 with fp16/bf16, each lane takes
// its sub-quantizers in a rotated order over a table laid out so a warp's 32 look-ups hit 32
// different banks (pq_scan.cu), instead of the ~3.5-way conflicts of random codes; other M scan
// the plain table. (Tried: M / 8 lanes per entry over a transposed table: slower, by its extra
// instructions and reductions.)
//
// Tables are float32 in shared memory (opt-in beyond 48 KB: M = 96 takes 96 KB), or, with fp16/bf16,
// 16-bit fixed point for M = 64 (pq_scan.cu) and otherwise float16: then each query's table is
// offset per sub-quantizer by its minimum and scaled so its largest entry is near 60 000, below
// half's 65 504; sums are accumulated in float32 and scaled back. No table overflows whatever the data's magnitude (Fashion-MNIST's raw pixels included), and
// each look-up keeps about 11 bits of the table's range.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

struct PqScanParams {
  int64_t rows = 0;
  int64_t nprobe = 0;
  int64_t chunks = 1;     // per query row
  int64_t chunk_len = 0;  // row positions per chunk
  const int32_t* lists = nullptr;        // rows x nprobe
  const float* coarse_keys = nullptr;    // rows x nprobe (coarse.h's keys)
  const float* queries = nullptr;        // rows x dim (rotated space): L2 needs their norms
  int64_t dim = 0;
  bool l2 = true;
  const int32_t* list_offset = nullptr;  // per list
  const int32_t* list_size = nullptr;
  const uint8_t* codes = nullptr;  // arena codes, code_stride bytes per slot
  int64_t code_stride = 0;
  int64_t m = 0;
  const float* entry_terms = nullptr;  // per slot (L2), or null
  const float* tables = nullptr;       // rows x m x 256
  float* dist = nullptr;               // row r at dist + r * row_stride
  int64_t row_stride = 0;
};

// Shared memory a block needs (code_stride: the arena's); the caller checks it against the limit.
int64_t pq_scan_shared_bytes(int64_t m, int64_t code_stride, bool half_tables);

void launch_pq_scan(const PqScanParams& p, bool half_tables, cudaStream_t stream);

}  // namespace quiver::gpu
