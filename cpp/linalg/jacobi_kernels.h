// The inner loops of one-sided Jacobi (svd.cpp): dot products and plane rotations of double vectors.
// The same source (jacobi_kernels.inc) compiled once per instruction set, chosen at run time: the
// compiler's own vectorisation with AVX2 and FMA runs them about 1.6x faster than with SSE2.
#pragma once

#include <cstdint>

namespace quiver {

struct JacobiKernels {
  // sum_r x[r] * y[r]
  double (*dot)(const double* x, const double* y, int64_t n);
  // (x, y) <- (c x - s y, s x + c y), elementwise
  void (*rotate)(double* x, double* y, int64_t n, double c, double s);
};

JacobiKernels jacobi_kernels_portable();
JacobiKernels jacobi_kernels_avx2();
JacobiKernels jacobi_kernels_avx512();

// The best set this processor runs (core/simd_level.h).
JacobiKernels best_jacobi_kernels();

}  // namespace quiver
