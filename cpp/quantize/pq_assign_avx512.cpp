// GCC 12 warns about the deliberately undefined pass-through operand inside its own AVX-512
// intrinsics (gathers, shifts, reductions): a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "cpp/quantize/pq_assign.h"
#include "cpp/quantize/product_quantizer.h"

namespace quiver {

namespace {
constexpr int kWidth = 16;                                   // floats per AVX-512 register
constexpr int kRegisters = static_cast<int>(kPqCentroids) / kWidth;  // all 256 distances stay in registers
}  // namespace

void pq_assign_avx512(const float* x, int64_t stride, int64_t rows, int64_t dsub, const float* codebook_t,
                      uint8_t* codes, int64_t code_stride) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* xi = x + i * stride;
    __m512 distance[kRegisters];
    for (int r = 0; r < kRegisters; ++r) distance[r] = _mm512_setzero_ps();
    for (int64_t d = 0; d < dsub; ++d) {
      const __m512 v = _mm512_set1_ps(xi[d]);
      const float* c = codebook_t + d * kPqCentroids;
      for (int r = 0; r < kRegisters; ++r) {
        const __m512 diff = _mm512_sub_ps(v, _mm512_loadu_ps(c + r * kWidth));
        distance[r] = _mm512_fmadd_ps(diff, diff, distance[r]);
      }
    }
    __m512 low = distance[0];
    for (int r = 1; r < kRegisters; ++r) low = _mm512_min_ps(low, distance[r]);
    const __m512 smallest = _mm512_set1_ps(_mm512_reduce_min_ps(low));
    int best = 0;
    for (int r = 0; r < kRegisters; ++r) {
      const unsigned mask = _mm512_cmp_ps_mask(distance[r], smallest, _CMP_EQ_OQ);
      if (mask) {
        best = r * kWidth + __builtin_ctz(mask);  // the first: ties go to the smaller index
        break;
      }
    }
    codes[i * code_stride] = static_cast<uint8_t>(best);
  }
}

}  // namespace quiver
