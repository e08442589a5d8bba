#include "cpp/metric/vector_distance_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace quiver {

namespace {
constexpr int kLanes = 8;  // the portable loops' partial results: one per lane
constexpr int kSums = 4;   // L1's vectors of partial sums (as vector_distance.cpp)

inline __m256 abs_diff(const float* x, const float* y) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  return _mm256_andnot_ps(sign, _mm256_sub_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(y)));
}
}  // namespace

float l1_distance_avx2(const float* x, const float* y, int64_t dim) {
  __m256 partial[kSums] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                           _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + kSums * kLanes <= dim; i += kSums * kLanes)
    for (int s = 0; s < kSums; ++s)
      partial[s] = _mm256_add_ps(partial[s], abs_diff(x + i + s * kLanes, y + i + s * kLanes));
  for (; i + kLanes <= dim; i += kLanes) partial[0] = _mm256_add_ps(partial[0], abs_diff(x + i, y + i));
  float sum = 0;
  for (; i < dim; ++i) sum += std::fabs(x[i] - y[i]);
  alignas(32) float lane[kLanes];
  _mm256_store_ps(lane, _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(partial[0], partial[1]), partial[2]),
                                      partial[3]));
  for (float p : lane) sum += p;  // the tail first, then lanes 0..7, as vector_distance.cpp does
  return sum;
}

float linf_distance_avx2(const float* x, const float* y, int64_t dim) {
  __m256 partial = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + kLanes <= dim; i += kLanes) partial = _mm256_max_ps(partial, abs_diff(x + i, y + i));
  float result = 0;
  for (; i < dim; ++i) result = std::max(result, std::fabs(x[i] - y[i]));
  alignas(32) float lane[kLanes];
  _mm256_store_ps(lane, partial);
  for (float p : lane) result = std::max(result, p);  // a maximum is exact: any order gives the same
  return result;
}

}  // namespace quiver
