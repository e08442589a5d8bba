#include "cpp/graph/reduced_space.h"

#include <algorithm>
#include <cmath>

#include "cpp/blas/gemm.h"
#include "cpp/core/random.h"
#include "cpp/core/thread_pool.h"
#include "cpp/linalg/orthonormalise.h"
#include "cpp/linalg/svd.h"

namespace quiver {

namespace {

// Rows of the sample whose covariance gives the directions: enough for a stable top subspace.
constexpr int64_t kSampleRows = 8192;
// Directions iterated beyond those kept (they speed up the convergence of the last kept ones), and
// the iterations: the top subspace of image-like data settles within a few.
constexpr int64_t kOversampling = 8;
constexpr int kSubspaceIterations = 6;
// Rows per task of the parallel GEMMs.
constexpr int64_t kRowsPerTask = 256;

// Orthonormalises the p rows of q (p x dim, row-major, p <= dim) in place, in double.
void orthonormalise(std::vector<float>& q, int64_t p, int64_t dim) {
  std::vector<double> rows(q.begin(), q.end());
  orthonormalise_rows(rows.data(), p, dim);
  std::copy(rows.begin(), rows.end(), q.begin());
}

// The sample's covariance (dim x dim, float): every (n / rows)-th row, centred.
std::vector<float> sample_covariance(ThreadPool& pool, const float* x, int64_t n, int64_t dim) {
  const int64_t rows = std::min(n, kSampleRows);
  std::vector<double> mean(static_cast<size_t>(dim), 0.0);
  std::vector<float> columns(static_cast<size_t>(dim * rows));  // the sample transposed: dim x rows
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = x + (i * n / rows) * dim;
    for (int64_t d = 0; d < dim; ++d) {
      columns[d * rows + i] = row[d];
      mean[d] += row[d];
    }
  }
  for (double& m : mean) m /= static_cast<double>(rows);
  for (int64_t d = 0; d < dim; ++d)
    for (int64_t i = 0; i < rows; ++i) columns[d * rows + i] -= static_cast<float>(mean[d]);
  std::vector<float> covariance(static_cast<size_t>(dim * dim));
  const int64_t tasks = (dim + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(tasks, [&](int64_t t) {
    const int64_t first = t * kRowsPerTask, count = std::min(kRowsPerTask, dim - first);
    gemm_abt(count, dim, rows, 1.0f / static_cast<float>(rows), &columns[first * rows], rows, columns.data(), rows,
             &covariance[first * dim], dim);
  });
  return covariance;
}

}  // namespace

ReducedSpace reduce_for_build(ThreadPool& pool, const float* x, int64_t n, int64_t dim, uint64_t seed) {
  if (dim < kMinReducedInputDim || n <= 0) return ReducedSpace{};
  return principal_projection(pool, x, n, dim, kReducedDim, seed);
}

ReducedSpace principal_projection(ThreadPool& pool, const float* x, int64_t n, int64_t dim, int64_t directions,
                                  uint64_t seed) {
  ReducedSpace space;
  const int64_t kept = std::min(directions, dim);
  const int64_t p = std::min(kept + kOversampling, dim);
  const std::vector<float> covariance = sample_covariance(pool, x, n, dim);

  // Subspace iteration: the rows of q converge to a basis of the top-p principal subspace.
  Random random(seed);
  std::vector<float> q(static_cast<size_t>(p * dim)), y(q.size());
  for (float& v : q) v = static_cast<float>(random.uniform() * 2 - 1);
  orthonormalise(q, p, dim);
  for (int it = 0; it < kSubspaceIterations; ++it) {
    gemm_abt(p, dim, dim, 1.0f, q.data(), dim, covariance.data(), dim, y.data(), dim);  // rows C q_i
    q.swap(y);
    orthonormalise(q, p, dim);
  }
  // Rayleigh-Ritz: the p x p projection of C on the subspace, whose eigenvectors order the basis by
  // variance; the top `kept` of them are the directions.
  gemm_abt(p, dim, dim, 1.0f, q.data(), dim, covariance.data(), dim, y.data(), dim);
  std::vector<float> small(static_cast<size_t>(p * p));
  gemm_abt(p, p, dim, 1.0f, y.data(), dim, q.data(), dim, small.data(), p);
  std::vector<double> symmetric(static_cast<size_t>(p * p));
  for (int64_t i = 0; i < p; ++i)
    for (int64_t j = 0; j < p; ++j) symmetric[i * p + j] = 0.5 * (double(small[i * p + j]) + double(small[j * p + i]));
  const Svd eigen = svd_jacobi(nullptr, p, p, symmetric.data());  // PSD: singular = eigen
  std::vector<float> basis(static_cast<size_t>(kept * dim), 0.0f);  // kept x dim, rows the directions
  for (int64_t j = 0; j < kept; ++j)
    for (int64_t i = 0; i < p; ++i) {
      const float w = static_cast<float>(eigen.v[i * p + j]);
      for (int64_t d = 0; d < dim; ++d) basis[j * dim + d] += w * q[i * dim + d];
    }

  space.dim = kept;
  space.basis = std::move(basis);
  space.basis_rows = n;
  extend_reduced_space(pool, space, x, n, dim);
  return space;
}

void extend_reduced_space(ThreadPool& pool, ReducedSpace& space, const float* x, int64_t n, int64_t input_dim) {
  const int64_t kept = space.dim, done = static_cast<int64_t>(space.vectors.size()) / kept;
  space.vectors.resize(static_cast<size_t>(n * kept));
  const int64_t tasks = (n - done + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(tasks, [&](int64_t t) {
    const int64_t first = done + t * kRowsPerTask, count = std::min(kRowsPerTask, n - first);
    gemm_abt(count, kept, input_dim, 1.0f, x + first * input_dim, input_dim, space.basis.data(), input_dim,
             &space.vectors[first * kept], kept);
  });
}

}  // namespace quiver
