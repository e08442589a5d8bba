#include "cpp/graph/graph_distance.h"

#include "cpp/core/simd_level.h"

namespace quiver {

namespace {
constexpr int kLanes = 8;  // independent partial sums, so the compiler can vectorise the loops
}  // namespace

float l2_key_portable(const float* x, const float* y, int64_t dim) {
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= dim; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float d = x[i + l] - y[i + l];
      partial[l] += d * d;
    }
  float sum = 0;
  for (; i < dim; ++i) sum += (x[i] - y[i]) * (x[i] - y[i]);
  for (float p : partial) sum += p;
  return sum;
}

float ip_key_portable(const float* x, const float* y, int64_t dim) {
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= dim; i += kLanes)
    for (int l = 0; l < kLanes; ++l) partial[l] += x[i + l] * y[i + l];
  float sum = 0;
  for (; i < dim; ++i) sum += x[i] * y[i];
  for (float p : partial) sum += p;
  return -sum;
}

KeyFn search_key(Metric metric) {
  const bool l2 = metric == Metric::l2;
  switch (simd_level()) {
    case SimdLevel::avx512: return l2 ? l2_key_avx512 : ip_key_avx512;
    case SimdLevel::avx2: return l2 ? l2_key_avx2 : ip_key_avx2;
    case SimdLevel::portable: break;
  }
  return l2 ? l2_key_portable : ip_key_portable;
}

KeyFn prune_key(Metric metric) {
  return search_key(metric == Metric::inner_product ? Metric::inner_product : Metric::l2);
}

}  // namespace quiver
