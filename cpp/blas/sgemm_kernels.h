// quiver's own fp32 kernels for gemm_abt (blas/gemm.h), one per instruction set, each in a file
// compiled for it; gemm.cpp picks one at run time. Internal: callers use gemm_abt.
#pragma once

#include <cstdint>

namespace quiver {

// C (m x n, row stride ldc) = alpha * A (m x k, row stride lda) * B^T (B: n x k, row stride ldb).
// Writes the m x n tile only and reads nothing of C. Single-threaded and reentrant: each calling
// thread keeps a scratch of at most about 1.2 MB between calls (the packed block of A and one packed
// panel of B). Returns false when that scratch cannot be allocated (nothing written then).
//
// Accuracy: each C entry is alpha times a sum of k fp32 products, accumulated in fp32 (fused
// multiply-adds) in blocks of at most 512 terms, so |error| <= (k + 2) * 2^-24 * |alpha| *
// sum_t |a_t b_t| (plus underflow), as for any fp32 GEMM.
//
// m, n, k >= 0; lda, ldb >= k; ldc >= n. Only on processors with AVX-512 F, BW, DQ and VL:
bool sgemm_abt_avx512(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                      const float* b, int64_t ldb, float* c, int64_t ldc);
// ... with AVX2 and FMA:
bool sgemm_abt_avx2(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float* c, int64_t ldc);

}  // namespace quiver
