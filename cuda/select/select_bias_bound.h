// Lower bounds of a column bias over slots of 8 columns, for the 16-bit key path of the selection
// (select_kernel.cuh): with them a warp rejects a group of keys by one conservative test on the
// packed 16-bit values (min key >= scale * min value + min bias), without reading the bias, which is
// 4 bytes a column against the key's 2.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu::detail {

constexpr int64_t kBiasSlotCols = 8;
// Rows shorter than this keep reading the bias (the workspace is not reserved for them).
constexpr int64_t kBiasBoundMinCols = 1024;

inline int64_t bias_bound_count(int64_t cols) { return (cols + kBiasSlotCols - 1) / kBiasSlotCols; }

// bound[j] = the smallest bias[c] for c in [8j, min(8j + 8, cols)), NaNs ignored (NaN when all are:
// their keys are NaN, which the selection drops). Enqueued on `stream`.
void launch_bias_bound(const float* bias, int64_t cols, float* bound, cudaStream_t stream);

}  // namespace quiver::gpu::detail
