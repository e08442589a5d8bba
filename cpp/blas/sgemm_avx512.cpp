// The fp32 GEMM kernel for gemm_abt on AVX-512 (F, BW, DQ, VL). Compiled with the AVX-512 flags and
// called only where the processor has them; it shares no inline code with other files (no quiver or
// standard-library templates), so the linker cannot pick an AVX-512 copy of a function for code that
// runs elsewhere.
//
// Structure, as in bf16_gemm_avx512bf16.cpp. k is cut into as few equal blocks as kMaxKc allows (one
// up to k = 512). For each block, the rows of A are taken in blocks of about L2's size, each packed
// into micro-panels of about kMr rows (element (p, r) at p * rows + r, read by broadcast). Then for
// each kNr columns of C the kNr rows of B are packed into a panel (element (p, j) at p * kNr + j,
// transposed in 8 x 8 blocks; the columns past n are zeros), and the micro-kernel runs over the
// micro-panels of the A block with kMr x kNp accumulators. Per k index it issues kMr * kNp FMAs
// against kNp loads and kMr broadcasts, so it is bound by the FMA units; operands come from L1/L2.
#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cpp/blas/sgemm_kernels.h"

namespace quiver {

namespace {

constexpr int kLanes = 16;  // fp32 lanes per register
// A rows per micro-kernel and registers of C columns: kMr * kNp accumulators, kNp B registers and
// a broadcast A value within the 32 zmm registers (the shape of the BF16 kernel).
constexpr int kMr = 8;
constexpr int kNp = 3;
constexpr int kNr = kNp * kLanes;  // C columns per B panel
// k indices per block: two blocks of 392 (k = 784) measured 10% faster than one of 784 on Zen 4,
// the B panel (kNr * 4 bytes per index) then staying nearer the core; C is written once per block.
constexpr int64_t kMaxKc = 512;
// Bytes of packed A per block: about a Zen 4 core's L2 (1 MB). The A micro-panels are read at a low
// rate and stream well; larger blocks pack B fewer times (512 x 2048 x 784: 1 MB blocks measured 15%
// faster than 256 KB ones).
constexpr int64_t kABlockBytes = 1024 * 1024;
constexpr size_t kAlign = 64;


// Lanes [0, count) set; count may be <= 0 or > kLanes.
inline __mmask16 lanes_below(int64_t count) {
  if (count <= 0) return 0;
  if (count >= kLanes) return static_cast<__mmask16>(0xffff);
  return static_cast<__mmask16>((1u << count) - 1);
}

// c (MR x width, width <= kNr) = alpha * A micro-panel (MR rows, kc indices, element (p, r) at
// a[p * MR + r]) times the B panel b; or c += ... when accumulate.
template <int MR>
void micro_kernel(const float* a, const float* b, int64_t kc, float alpha, float* c, int64_t ldc,
                  int64_t width, bool accumulate) {
  __m512 acc[MR][kNp];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < kNp; ++j) acc[r][j] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    __m512 bv[kNp];
#pragma GCC unroll 3
    for (int j = 0; j < kNp; ++j) bv[j] = _mm512_load_ps(b + p * kNr + j * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[p * MR + r]);
#pragma GCC unroll 3
      for (int j = 0; j < kNp; ++j) acc[r][j] = _mm512_fmadd_ps(av, bv[j], acc[r][j]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha);
  __mmask16 mask[kNp];
#pragma GCC unroll 3
  for (int j = 0; j < kNp; ++j) mask[j] = lanes_below(width - j * kLanes);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < kNp; ++j) {
      float* cp = c + r * ldc + j * kLanes;
      if (mask[j] == 0xffff) {
        const __m512 v = accumulate ? _mm512_fmadd_ps(va, acc[r][j], _mm512_loadu_ps(cp))
                                    : _mm512_mul_ps(va, acc[r][j]);
        _mm512_storeu_ps(cp, v);
      } else if (mask[j] != 0) {
        const __m512 v = accumulate
                             ? _mm512_fmadd_ps(va, acc[r][j], _mm512_maskz_loadu_ps(mask[j], cp))
                             : _mm512_mul_ps(va, acc[r][j]);
        _mm512_mask_storeu_ps(cp, mask[j], v);
      }
    }
}

#include "cpp/blas/sgemm_blocking.inc"

}  // namespace

bool sgemm_abt_avx512(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                      const float* b, int64_t ldb, float* c, int64_t ldc) {
  return blocked_sgemm(m, n, k, alpha, a, lda, b, ldb, c, ldc);
}

}  // namespace quiver
