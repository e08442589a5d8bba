#include "cpp/blas/gemm.h"

// Declared here rather than through <cblas.h>, whose location differs between OpenBLAS variants.
extern "C" void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                            const float* a, int lda, const float* b, int ldb, float beta, float* c,
                            int ldc);

namespace quiver {

namespace {
constexpr int kRowMajor = 101;  // CblasRowMajor
constexpr int kNoTrans = 111;   // CblasNoTrans
constexpr int kTrans = 112;     // CblasTrans
}  // namespace

void gemm_abt(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
              const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(kRowMajor, kNoTrans, kTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f,
              c, static_cast<int>(ldc));
}

}  // namespace quiver
