// gemm_abt: quiver's own kernels (sgemm_kernels.h) where the processor has AVX-512 or AVX2 with FMA,
// else OpenBLAS.
#include "cpp/blas/gemm.h"

#include <mutex>

#include "cpp/blas/sgemm_kernels.h"
#include "cpp/core/simd_level.h"

// Declared here rather than through <cblas.h>, whose location differs between OpenBLAS variants.
extern "C" void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                            const float* a, int lda, const float* b, int ldb, float beta, float* c,
                            int ldc);
extern "C" int openblas_get_parallel(void);

namespace quiver {

namespace {
constexpr int kRowMajor = 101;  // CblasRowMajor
constexpr int kNoTrans = 111;   // CblasNoTrans
constexpr int kTrans = 112;     // CblasTrans

// A single-threaded OpenBLAS built without USE_LOCKING (Debian's openblas-serial among them) shares
// its work buffers between calls without a lock: concurrent calls from several threads can corrupt
// each other's results (seen here: 16 x 1024 x 24 products from 8 threads). Its calls are therefore
// serialised; the threaded builds lock internally. That halves exact-search throughput on two cores,
// hence quiver's own kernels wherever the processor runs one.
bool needs_lock() {
  static const bool serial = openblas_get_parallel() == 0;
  return serial;
}
std::mutex& gemm_mutex() {
  static std::mutex mutex;
  return mutex;
}

using Kernel = bool (*)(int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                        float*, int64_t);

// The widest own kernel the processor runs (core/simd_level.h); null: OpenBLAS (QUIVER_SIMD=portable).
Kernel own_kernel() {
  static const Kernel chosen = [] () -> Kernel {
    switch (simd_level()) {
      case SimdLevel::avx512: return sgemm_abt_avx512;
      case SimdLevel::avx2: return sgemm_abt_avx2;
      case SimdLevel::portable: break;
    }
    return nullptr;
  }();
  return chosen;
}
}  // namespace

void gemm_abt(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
              const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  // A kernel that cannot allocate its scratch leaves the call to OpenBLAS.
  const Kernel kernel = own_kernel();
  if (kernel && kernel(m, n, k, alpha, a, lda, b, ldb, c, ldc)) return;
  std::unique_lock<std::mutex> lock(gemm_mutex(), std::defer_lock);
  if (needs_lock()) lock.lock();
  cblas_sgemm(kRowMajor, kNoTrans, kTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f,
              c, static_cast<int>(ldc));
}

}  // namespace quiver
