#include "cpp/distance/vectors.h"

#include <algorithm>
#include <cmath>

#include "cpp/core/error.h"
#include "cpp/core/simd_level.h"
#include "cpp/distance/vectors_avx2.h"

namespace quiver {

namespace {
// Independent partial sums let the compiler vectorise without reassociating a single sum.
constexpr int kLanes = 8;
// From this length on the AVX2 copies (vectors_avx2.h) pay for the indirect call.
constexpr int64_t kSimdMinDim = 32;

bool has_avx2() {
  static const bool avx2 = simd_level() != SimdLevel::portable;
  return avx2;
}
}  // namespace

float dot(const float* x, const float* y, int64_t dim) {
  if (dim >= kSimdMinDim && has_avx2()) return dot_avx2(x, y, dim);
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= dim; i += kLanes)
    for (int l = 0; l < kLanes; ++l) partial[l] += x[i + l] * y[i + l];
  float sum = 0;
  for (; i < dim; ++i) sum += x[i] * y[i];
  for (float p : partial) sum += p;
  return sum;
}

float squared_l2(const float* x, const float* y, int64_t dim) {
  if (dim >= kSimdMinDim && has_avx2()) return squared_l2_avx2(x, y, dim);
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

float squared_norm(const float* x, int64_t dim) { return dot(x, x, dim); }

std::vector<float> squared_norms(const float* x, int64_t n, int64_t dim) {
  std::vector<float> norms(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) norms[i] = squared_norm(x + i * dim, dim);
  return norms;
}

void check_vectors(const char* what, const float* x, int64_t n, int64_t dim, bool nonzero_rows) {
  for (int64_t r = 0; r < n; ++r) {
    const float* row = x + r * dim;
    // One vectorised pass: NaN and infinities carry through a sum of squares, so a finite squared
    // norm means every value is finite (the per-value loops run only to name what failed).
    const float norm = squared_norm(row, dim);
    if (!std::isfinite(norm)) {
      for (int64_t c = 0; c < dim; ++c)
        if (!std::isfinite(row[c]))
          fail(Status::invalid_argument, what, ": row ", r, ", column ", c, " is ", row[c],
               " (vectors must be finite)");
      // Squares of values near FLT_MAX overflow, and every distance of the row would be infinite.
      fail(Status::invalid_argument, what, ": row ", r,
           " has values too large for float32 distance arithmetic (its squared norm overflows)");
    }
    if (nonzero_rows && norm == 0.0f && std::all_of(row, row + dim, [](float v) { return v == 0.0f; }))
      fail(Status::invalid_argument, what, ": row ", r, " is the zero vector, which has no cosine similarity");
  }
}

const float* prepare_vectors(const char* what, const float* x, int64_t n, int64_t dim, Metric metric,
                             std::vector<float>& storage) {
  check_vectors(what, x, n, dim, metric == Metric::cosine);
  if (metric != Metric::cosine) return x;
  storage.resize(static_cast<size_t>(n * dim));
  normalize_rows(x, n, dim, storage.data());
  return storage.data();
}

void normalize_rows(const float* x, int64_t n, int64_t dim, float* out) {
  for (int64_t r = 0; r < n; ++r) {
    const float* row = x + r * dim;
    const double norm = std::sqrt(static_cast<double>(squared_norm(row, dim)));
    const float scale = norm > 0 ? static_cast<float>(1.0 / norm) : 0.0f;
    for (int64_t c = 0; c < dim; ++c) out[r * dim + c] = row[c] * scale;
  }
}

}  // namespace quiver
