// What the last gpu::range_search call of this thread did (range_search.cu), and a knob that makes
// its hit buffers small, for tests and benchmarks to see and force its paths. CUDA-free.
#pragma once

#include <cstdint>

namespace quiver::gpu {

struct RangeCallStats {
  bool tf32 = false;          // the GEMM ran on TF32 tensor cores (else SGEMM)
  bool fused = false;         // TF32 products and filter in one kernel (range_fused.h), no tiles
  int64_t searches = 0;       // query blocks searched (a block searched again counts again)
  int64_t overflows = 0;      // searches whose hits did not fit the hit buffer (searched again)
  int64_t sorts = 0;          // parts sorted and copied to the host (one per block with hits, unless split)
  int64_t hit_capacity = 0;   // entries of the larger hit buffer at the end
  // Host wall time, milliseconds: waiting for blocks' searches to end (their counts), and writing
  // the results into host memory (growing the vectors and the copies out of the device).
  double wait_ms = 0, results_ms = 0;
};

// Zeros for calls that returned before searching (nq = 0, n = 0, negative L2 radius, errors).
RangeCallStats last_range_call_stats();

// Testing: on this thread, hit buffers of more than `hit_entries` entries and sort buffers of more
// than `sort_entries` fail as if the device were out of memory, so the paths that search or sort a
// block in parts run on small data. 0 (the default): no limit.
void set_range_buffer_limits_for_testing(int64_t hit_entries, int64_t sort_entries);

// Testing and benchmarks: on this thread, false makes TF32 searches write distance tiles for the
// filter even where the fused kernel (range_fused.h) would take them. Default true.
void set_range_fused_for_testing(bool allow);

}  // namespace quiver::gpu
