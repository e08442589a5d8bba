// One-sided Jacobi SVD: orthonormal factors and reconstruction on random, rank-deficient and zero
// matrices; warm starts; the parallel path; the Procrustes rotation recovering a known rotation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpp/core/thread_pool.h"
#include "cpp/linalg/jacobi_kernels.h"
#include "cpp/linalg/svd.h"

namespace quiver {
namespace {

std::vector<double> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> value(0.0, 1.0);
  std::vector<double> a(rows * cols);
  for (auto& v : a) v = value(gen);
  return a;
}

// Largest |(Q^T Q - I)_ij| for Q (rows x cols, row-major).
double orthonormality_error(const std::vector<double>& q, int64_t rows, int64_t cols) {
  double worst = 0;
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0;
      for (int64_t r = 0; r < rows; ++r) sum += q[r * cols + i] * q[r * cols + j];
      worst = std::max(worst, std::fabs(sum - (i == j ? 1.0 : 0.0)));
    }
  return worst;
}

// Largest |(U S V^T - A)_ij| relative to the largest |A_ij| (or 1 for a zero matrix).
double reconstruction_error(const Svd& svd, const std::vector<double>& a) {
  double worst = 0, scale = 0;
  for (double v : a) scale = std::max(scale, std::fabs(v));
  for (int64_t r = 0; r < svd.rows; ++r)
    for (int64_t c = 0; c < svd.cols; ++c) {
      double sum = 0;
      for (int64_t k = 0; k < svd.cols; ++k) sum += svd.u[r * svd.cols + k] * svd.s[k] * svd.v[c * svd.cols + k];
      worst = std::max(worst, std::fabs(sum - a[r * svd.cols + c]));
    }
  return worst / (scale > 0 ? scale : 1);
}

void expect_valid(const Svd& svd, const std::vector<double>& a, const char* what) {
  EXPECT_LT(orthonormality_error(svd.u, svd.rows, svd.cols), 1e-12) << what;
  EXPECT_LT(orthonormality_error(svd.v, svd.cols, svd.cols), 1e-12) << what;
  EXPECT_LT(reconstruction_error(svd, a), 1e-12) << what;
  for (int64_t i = 0; i < svd.cols; ++i) {
    EXPECT_GE(svd.s[i], 0) << what;
    if (i > 0) EXPECT_LE(svd.s[i], svd.s[i - 1]) << what;
  }
}

TEST(Svd, RandomMatricesOfAwkwardShapes) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {5, 3}, {17, 17}, {40, 33}, {64, 64}, {9, 1}}) {
    const auto a = random_matrix(rows, cols, static_cast<uint32_t>(rows * 100 + cols));
    expect_valid(svd_jacobi(nullptr, rows, cols, a.data()), a, "random");
  }
}

TEST(Svd, RankDeficientAndZeroMatrices) {
  // A rank-3 product, a matrix with equal and zero columns, and the zero matrix.
  const int64_t n = 20, rank = 3;
  const auto b = random_matrix(n, rank, 1), c = random_matrix(rank, n, 2);
  std::vector<double> low(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < rank; ++k) low[i * n + j] += b[i * rank + k] * c[k * n + j];
  const Svd svd = svd_jacobi(nullptr, n, n, low.data());
  expect_valid(svd, low, "rank 3");
  EXPECT_LT(svd.s[rank], 1e-12 * svd.s[0]);

  auto repeated = random_matrix(n, n, 3);
  for (int64_t r = 0; r < n; ++r) {
    repeated[r * n + 4] = repeated[r * n + 2];
    repeated[r * n + 7] = 0;
    repeated[r * n + 8] = 0;
  }
  expect_valid(svd_jacobi(nullptr, n, n, repeated.data()), repeated, "equal and zero columns");

  const std::vector<double> zero(n * n, 0.0);
  const Svd z = svd_jacobi(nullptr, n, n, zero.data());
  expect_valid(z, zero, "zero");
  for (double s : z.s) EXPECT_EQ(s, 0.0);
}

TEST(Svd, WarmStartAndParallelPath) {
  ThreadPool pool(2);
  const int64_t n = 260;  // enough columns for the rounds to run on the pool
  const auto a = random_matrix(n, n, 9);
  const Svd cold = svd_jacobi(&pool, n, n, a.data());
  expect_valid(cold, a, "parallel");
  // A slightly changed matrix, started from the first one's V: fewer sweeps, same accuracy.
  auto b = a;
  for (size_t i = 0; i < b.size(); i += 5) b[i] *= 1.001;
  const Svd warm = svd_jacobi(&pool, n, n, b.data(), cold.v.data());
  expect_valid(warm, b, "warm");
  EXPECT_LT(warm.sweeps, cold.sweeps);
}

TEST(Svd, ProcrustesRecoversARotation) {
  // Y = X Q^T for an orthogonal Q: the rotation carrying X onto Y is Q.
  const int64_t dim = 11, n = 50;
  const auto g = random_matrix(dim, dim, 4);
  const Svd q_svd = svd_jacobi(nullptr, dim, dim, g.data());
  std::vector<double> q(dim * dim, 0.0);  // U V^T: orthogonal
  for (int64_t i = 0; i < dim; ++i)
    for (int64_t j = 0; j < dim; ++j)
      for (int64_t k = 0; k < dim; ++k) q[i * dim + j] += q_svd.u[i * dim + k] * q_svd.v[j * dim + k];
  const auto x = random_matrix(n, dim, 5);
  std::vector<double> m(dim * dim, 0.0);  // X^T Y with Y = X Q^T
  for (int64_t i = 0; i < n; ++i)
    for (int64_t a = 0; a < dim; ++a)
      for (int64_t b = 0; b < dim; ++b) {
        double y = 0;
        for (int64_t k = 0; k < dim; ++k) y += x[i * dim + k] * q[b * dim + k];
        m[a * dim + b] += x[i * dim + a] * y;
      }
  const std::vector<double> r = procrustes_rotation(nullptr, dim, m.data());
  for (int64_t i = 0; i < dim * dim; ++i) EXPECT_NEAR(r[i], q[i], 1e-10);
}

TEST(Svd, EveryKernelSetComputesTheSameLoops) {
  std::vector<JacobiKernels> sets{jacobi_kernels_portable()};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) sets.push_back(jacobi_kernels_avx2());
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    sets.push_back(jacobi_kernels_avx512());
  for (int64_t n : {0, 1, 7, 8, 9, 33, 100}) {
    const auto x = random_matrix(1, n, static_cast<uint32_t>(n + 1)), y = random_matrix(1, n, static_cast<uint32_t>(n + 2));
    double dot = 0;
    for (int64_t i = 0; i < n; ++i) dot += x[i] * y[i];
    for (const JacobiKernels& k : sets) {
      EXPECT_NEAR(k.dot(x.data(), y.data(), n), dot, 1e-12 * (1 + n)) << n;
      auto a = x, b = y;
      k.rotate(a.data(), b.data(), n, 0.8, 0.6);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR(a[i], 0.8 * x[i] - 0.6 * y[i], 1e-15 * 4) << n;
        EXPECT_NEAR(b[i], 0.6 * x[i] + 0.8 * y[i], 1e-15 * 4) << n;
      }
    }
  }
}

TEST(Svd, RejectsWideMatrices) { EXPECT_ANY_THROW(svd_jacobi(nullptr, 2, 3, std::vector<double>(6).data())); }

}  // namespace
}  // namespace quiver
