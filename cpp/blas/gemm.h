// The one GEMM shape the engine needs: quiver's own kernels on x86-64 with AVX-512 or AVX2 + FMA,
// OpenBLAS elsewhere.
#pragma once

#include <cstdint>

namespace quiver {

// C (m x n, row stride ldc) = alpha * A (m x k, row-major) * B^T, with B (n x k, row-major):
// the inner products of m queries with n database vectors, scaled by alpha. Single-threaded and safe
// to call from several threads at once (OpenBLAS's serial build is serialised by a lock); callers
// parallelise over tiles.
void gemm_abt(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
              const float* b, int64_t ldb, float* c, int64_t ldc);

}  // namespace quiver
