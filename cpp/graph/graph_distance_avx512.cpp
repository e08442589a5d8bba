// AVX-512 keys of graph_distance.h; compiled with -mavx512f..., called only where they exist. The
// tail is one masked load, so short and odd dimensions cost no scalar loop.
#include <immintrin.h>

#include "cpp/graph/graph_distance.h"

namespace quiver {

namespace {
constexpr int64_t kWidth = 16;  // floats per register

inline __mmask16 tail_mask(int64_t left) { return static_cast<__mmask16>((1u << left) - 1u); }

// GCC 12's _mm512_reduce_add_ps warns of an uninitialised variable in its own header; this is the
// same reduction (halves, then quarters) written out.
inline float sum_lanes(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
}  // namespace

float l2_key_avx512(const float* x, const float* y, int64_t dim) {
  // Four accumulators hide the FMA latency.
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
         a3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 4 * kWidth <= dim; i += 4 * kWidth) {
    const __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i));
    const __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16));
    const __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32));
    const __m512 d3 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48));
    a0 = _mm512_fmadd_ps(d0, d0, a0);
    a1 = _mm512_fmadd_ps(d1, d1, a1);
    a2 = _mm512_fmadd_ps(d2, d2, a2);
    a3 = _mm512_fmadd_ps(d3, d3, a3);
  }
  for (; i + kWidth <= dim; i += kWidth) {
    const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i));
    a1 = _mm512_fmadd_ps(d, d, a1);
  }
  if (i < dim) {
    const __mmask16 m = tail_mask(dim - i);
    const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i));
    a2 = _mm512_fmadd_ps(d, d, a2);
  }
  return sum_lanes(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

float ip_key_avx512(const float* x, const float* y, int64_t dim) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(),
         a3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 4 * kWidth <= dim; i += 4 * kWidth) {
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), a1);
    a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32), a2);
    a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48), a3);
  }
  for (; i + kWidth <= dim; i += kWidth)
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), a1);
  if (i < dim) {
    const __mmask16 m = tail_mask(dim - i);
    a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i), a2);
  }
  return -sum_lanes(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

}  // namespace quiver
