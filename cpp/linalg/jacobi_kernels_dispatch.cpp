#include "cpp/core/simd_level.h"
#include "cpp/linalg/jacobi_kernels.h"

namespace quiver {

JacobiKernels best_jacobi_kernels() {
  static const JacobiKernels chosen = [] {
    switch (simd_level()) {
      case SimdLevel::avx512: return jacobi_kernels_avx512();
      case SimdLevel::avx2: return jacobi_kernels_avx2();
      case SimdLevel::portable: break;
    }
    return jacobi_kernels_portable();
  }();
  return chosen;
}

}  // namespace quiver
