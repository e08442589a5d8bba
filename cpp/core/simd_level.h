// The widest instruction set the engine's own kernels may use on this processor, decided once.
#pragma once

namespace quiver {

enum class SimdLevel { portable, avx2, avx512 };

// AVX-512 (F, VL, BW, DQ) if present, else AVX2 with FMA, else portable. QUIVER_SIMD=portable|avx2|
// avx512 in the environment narrows the choice (for tests and comparisons); it never widens it.
SimdLevel simd_level();

}  // namespace quiver
