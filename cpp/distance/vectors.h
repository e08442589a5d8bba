// Small per-vector kernels: norms, normalisation, exact distances for re-ranking, validation.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/core/metric.h"
#include "cpp/core/thread_pool.h"

namespace quiver {

float dot(const float* x, const float* y, int64_t dim);
float squared_l2(const float* x, const float* y, int64_t dim);
float squared_norm(const float* x, int64_t dim);
// The squared norms of n rows.
std::vector<float> squared_norms(const float* x, int64_t n, int64_t dim);

// The exact value of the metric between x and y (for cosine, x and y are already normalised).
inline float exact_distance(Metric metric, const float* x, const float* y, int64_t dim) {
  return metric == Metric::l2 ? squared_l2(x, y, dim) : dot(x, y, dim);
}

// Throws invalid_argument naming `what` and the row if any of n x dim values is NaN or infinite,
// or, when nonzero_rows is set, if a row is all zeros (cosine cannot use it).
void check_vectors(const char* what, const float* x, int64_t n, int64_t dim, bool nonzero_rows);
// The same for rows [begin, end) of x, naming rows by their number in x plus first_row (x a slice of
// the caller's array that starts at its row first_row).
void check_vector_rows(const char* what, const float* x, int64_t begin, int64_t end, int64_t dim, bool nonzero_rows,
                       int64_t first_row = 0);

// Checks caller vectors (check_vectors) and returns them ready for the metric: as they are, or for
// cosine normalised into `storage`. Large inputs are checked on the pool's threads; the error names
// the first bad row all the same, counting from first_row (x a slice of the caller's array).
const float* prepare_vectors(ThreadPool& pool, const char* what, const float* x, int64_t n, int64_t dim,
                             Metric metric, std::vector<float>& storage, int64_t first_row = 0);

// out[i] = x[i] / |x[i]| for n rows.
void normalize_rows(const float* x, int64_t n, int64_t dim, float* out);

}  // namespace quiver
