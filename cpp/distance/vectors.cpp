#include "cpp/distance/vectors.h"

#include <algorithm>
#include <cmath>
#include <exception>

#include "cpp/core/error.h"
#include "cpp/core/simd_level.h"
#include "cpp/distance/vectors_avx2.h"

namespace quiver {

namespace {

// Floats one task of prepare_vectors checks: a slice big enough to be worth handing to a thread.
constexpr int64_t kPreparedFloatsPerTask = int64_t{1} << 17;
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
  check_vector_rows(what, x, 0, n, dim, nonzero_rows);
}

void check_vector_rows(const char* what, const float* x, int64_t begin, int64_t end, int64_t dim, bool nonzero_rows,
                       int64_t first_row) {
  for (int64_t r = begin; r < end; ++r) {
    const float* row = x + r * dim;
    // One vectorised pass: NaN and infinities carry through a sum of squares, so a finite squared
    // norm means every value is finite (the per-value loops run only to name what failed).
    const float norm = squared_norm(row, dim);
    if (!std::isfinite(norm)) {
      for (int64_t c = 0; c < dim; ++c)
        if (!std::isfinite(row[c]))
          fail(Status::invalid_argument, what, ": row ", first_row + r, ", column ", c, " is ", row[c],
               " (vectors must be finite)");
      // Squares of values near FLT_MAX overflow, and every distance of the row would be infinite.
      fail(Status::invalid_argument, what, ": row ", first_row + r,
           " has values too large for float32 distance arithmetic (its squared norm overflows)");
    }
    if (nonzero_rows && norm == 0.0f && std::all_of(row, row + dim, [](float v) { return v == 0.0f; }))
      fail(Status::invalid_argument, what, ": row ", first_row + r, " is the zero vector, which has no cosine similarity");
  }
}

const float* prepare_vectors(ThreadPool& pool, const char* what, const float* x, int64_t n, int64_t dim,
                             Metric metric, std::vector<float>& storage, int64_t first_row) {
  const bool cosine = metric == Metric::cosine;
  if (cosine) storage.resize(static_cast<size_t>(n * dim));
  // A big batch is checked (and normalised) in slices side by side: one thread would be a visible
  // part of a GPU search's time. Each slice keeps its error; the first slice's is the one reported.
  const int64_t rows_per_task = std::max<int64_t>(1, kPreparedFloatsPerTask / dim);
  const int64_t tasks = (n + rows_per_task - 1) / rows_per_task;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(tasks));
  auto prepare = [&](int64_t t) {
    const int64_t begin = t * rows_per_task, end = std::min(n, begin + rows_per_task);
    try {
      check_vector_rows(what, x, begin, end, dim, cosine, first_row);
      if (cosine) normalize_rows(x + begin * dim, end - begin, dim, storage.data() + begin * dim);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  if (tasks == 1) {
    prepare(0);
  } else {
    pool.parallel_for(tasks, prepare);
  }
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
  return cosine ? storage.data() : x;
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
