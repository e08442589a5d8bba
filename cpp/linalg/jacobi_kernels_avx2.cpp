#include "cpp/linalg/jacobi_kernels.h"

namespace quiver {

namespace {
#include "cpp/linalg/jacobi_kernels.inc"
}  // namespace

JacobiKernels jacobi_kernels_avx2() { return JacobiKernels{dot, rotate}; }

}  // namespace quiver
