// The TF32 search of the GPU range search in one kernel (range_search.cu): tensor-core products of a
// block of queries against the whole base whose keys are filtered where they are computed, so the
// distance tile that a cuBLAS GEMM would write and the filter read back (8 bytes per query and base
// row, ~80 GB for 10 000 queries against 1M rows) never leaves the SM.
//
// The products are those of tf32_select.h's mma.sync kernel (TF32 inputs truncated by the tensor
// cores, float accumulation, L2 keys fmaf(-2, <x, y>, ||y||^2)): certify.h's TF32 model covers them,
// so range_kernels.h's thresholds hold. A key within its query's threshold makes the row a
// candidate; the thread that holds it computes the exact float32 value (range_kernels.h's order of
// summation, bit for bit) and appends the hits as launch_range_filter does.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/flat/range_kernels.h"
#include "cuda/select/select.h"

namespace quiver::gpu {

// Whether the fused kernel takes the search: dim a multiple of 4 up to 128 (the query tile stays in
// shared memory), n below 2^30, TF32 tensor cores (compute capability 8.0 or later) and the shared
// memory the kernel takes on the device `limits` describe.
bool range_fused_fits(const SelectLimits& limits, int64_t dim, int64_t n);

// One block of queries against the whole base (device memory, both 16-byte aligned).
struct RangeFusedSearch {
  const float* queries = nullptr;     // rows x dim
  int64_t rows = 0;
  const float* base = nullptr;        // n x dim
  const float* norms = nullptr;       // L2: the n rows' squared norms; else unused
  int64_t n = 0, dim = 0;
  const float* thresholds = nullptr;  // rows (launch_range_thresholds, TF32 model)
  const uint8_t* filter = nullptr;    // allowed rows (gpu.h's RowFilter bits, on the device), or nullptr
  int64_t filter_bits = 0;
  float radius = 0.f;
  bool l2 = true;
};

// Appends every hit of the block to `out` (range_kernels.h's RangeHitBuffer, counters zeroed by the
// caller). range_fused_fits must hold.
void launch_range_fused(const SelectLimits& limits, const RangeFusedSearch& search, const RangeHitBuffer& out,
                        cudaStream_t stream);

}  // namespace quiver::gpu
