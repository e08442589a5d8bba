// The fused TF32 pass (tf32_select.h) for Hopper (compute capability 9.0): warpgroup products
// (wgmma) that run asynchronously from shared memory, where tf32_select.cu's kernel issues
// mma.sync from registers. Compiled for sm_90a only (the arch-specific instructions); launch_tf32_select
// chooses it on such devices.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace quiver::gpu {

// Shared memory the kernel takes for rows of dim values.
size_t tf32_select_sm90a_shared_bytes(int64_t dim);

// As launch_tf32_select, on a device of compute capability 9.0 (the caller checks the shapes).
void launch_tf32_select_sm90a(const float* queries, int64_t nq, const float* base, const float* base_norms,
                              int64_t row_offset, int64_t n, int64_t dim, int64_t kc, bool l2, const uint8_t* filter,
                              int64_t filter_bits, int64_t splits, const float* bounds, int64_t bounds_ld,
                              float* keys, int32_t* rows, cudaStream_t stream);

}  // namespace quiver::gpu
