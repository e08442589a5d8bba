// The arithmetic of an exact search's distance GEMM (qv_compute_mode_t). The CPU engine is exact in
// every mode; the CUDA backend trades precision for speed and re-ranks exactly.
#pragma once

#include <cstdint>

namespace quiver {

enum class ComputeMode : int32_t { fp32 = 0, tf32 = 1, fp16 = 2, bf16 = 3 };

}  // namespace quiver
