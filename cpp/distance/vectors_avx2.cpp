// The file is compiled with FMA enabled; fused multiply-adds would round differently from the
// portable loops, so contraction is off here.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "cpp/distance/vectors_avx2.h"

#include <immintrin.h>

namespace quiver {

namespace {
constexpr int kLanes = 8;  // the portable loops' partial sums: one per lane

// sum (the tail, summed first) + lane 0 + lane 1 + ... + lane 7, in that order as vectors.cpp does.
inline float finish(__m256 partial, float sum) {
  alignas(32) float lane[kLanes];
  _mm256_store_ps(lane, partial);
  for (float p : lane) sum += p;
  return sum;
}
}  // namespace

float dot_avx2(const float* x, const float* y, int64_t dim) {
  __m256 partial = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + kLanes <= dim; i += kLanes)
    partial = _mm256_add_ps(partial, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  float sum = 0;
  for (; i < dim; ++i) sum += x[i] * y[i];
  return finish(partial, sum);
}

float squared_l2_avx2(const float* x, const float* y, int64_t dim) {
  __m256 partial = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + kLanes <= dim; i += kLanes) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
    partial = _mm256_add_ps(partial, _mm256_mul_ps(d, d));
  }
  float sum = 0;
  for (; i < dim; ++i) sum += (x[i] - y[i]) * (x[i] - y[i]);
  return finish(partial, sum);
}

}  // namespace quiver
