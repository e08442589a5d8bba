#include "cpp/metric/vector_distance.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpp/core/error.h"
#include "cpp/core/simd_level.h"
#include "cpp/distance/vectors.h"
#include "cpp/metric/vector_distance_avx2.h"

namespace quiver {

namespace {
// Independent partial results (as in distance/vectors.cpp) let the compiler vectorise the loops
// without reassociating one sum; they are combined in a fixed order.
constexpr int kLanes = 8;
// L1 keeps four groups of partial sums: with one, each addition would wait for the one before.
constexpr int kSums = 4;
// From this length on the AVX2 copies (vector_distance_avx2.h) are faster: 1.7-2x for L1 and
// 1.8-2.6x for L-infinity (whose portable maximum is an integer one) at 16..1000 dimensions.
constexpr int64_t kSimdMinDim = 16;

bool has_avx2() {
  static const bool avx2 = simd_level() != SimdLevel::portable;
  return avx2;
}

inline float abs_diff(float x, float y) { return std::fabs(x - y); }

inline int32_t abs_diff_bits(float x, float y) {
  const float d = abs_diff(x, y);
  int32_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}
}  // namespace

float euclidean(const float* x, const float* y, int64_t dim) { return std::sqrt(squared_l2(x, y, dim)); }

float l1_distance(const float* x, const float* y, int64_t dim) {
  if (dim >= kSimdMinDim && has_avx2()) return l1_distance_avx2(x, y, dim);
  float p0[kLanes] = {}, p1[kLanes] = {}, p2[kLanes] = {}, p3[kLanes] = {};
  int64_t i = 0;
  for (; i + kSums * kLanes <= dim; i += kSums * kLanes)
    for (int l = 0; l < kLanes; ++l) {
      p0[l] += abs_diff(x[i + l], y[i + l]);
      p1[l] += abs_diff(x[i + kLanes + l], y[i + kLanes + l]);
      p2[l] += abs_diff(x[i + 2 * kLanes + l], y[i + 2 * kLanes + l]);
      p3[l] += abs_diff(x[i + 3 * kLanes + l], y[i + 3 * kLanes + l]);
    }
  for (; i + kLanes <= dim; i += kLanes)
    for (int l = 0; l < kLanes; ++l) p0[l] += abs_diff(x[i + l], y[i + l]);
  float sum = 0;
  for (; i < dim; ++i) sum += abs_diff(x[i], y[i]);
  // The four groups lane by lane, then the lanes in order: as the AVX2 copy adds its vectors.
  for (int l = 0; l < kLanes; ++l) sum += ((p0[l] + p1[l]) + p2[l]) + p3[l];
  return sum;
}

float linf_distance(const float* x, const float* y, int64_t dim) {
  if (dim >= kSimdMinDim && has_avx2()) return linf_distance_avx2(x, y, dim);
  // |x_i - y_i| >= 0, and non-negative floats order as their bit patterns do: an integer maximum is
  // exact and vectorises (a float one only with -ffinite-math-only, which the build does not set).
  int32_t partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= dim; i += kLanes)
    for (int l = 0; l < kLanes; ++l) partial[l] = std::max(partial[l], abs_diff_bits(x[i + l], y[i + l]));
  int32_t result = 0;
  for (; i < dim; ++i) result = std::max(result, abs_diff_bits(x[i], y[i]));
  for (int32_t p : partial) result = std::max(result, p);
  float value;
  std::memcpy(&value, &result, sizeof value);
  return value;
}

float metric_distance(Metric m, const float* x, const float* y, int64_t dim) {
  switch (m) {
    case Metric::l2: return euclidean(x, y, dim);
    case Metric::l1: return l1_distance(x, y, dim);
    case Metric::linf: return linf_distance(x, y, dim);
    default: break;
  }
  fail(Status::invalid_argument, "metric_distance: ", metric_name(m),
       " is not a metric over float vectors (use L2, L1 or L-infinity)");
}

}  // namespace quiver
