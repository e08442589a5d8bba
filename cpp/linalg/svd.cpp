#include "cpp/linalg/svd.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>

#include "cpp/core/error.h"
#include "cpp/core/thread_pool.h"
#include "cpp/linalg/jacobi_kernels.h"

namespace quiver {

namespace {

// Sweeps after which a finite matrix has always converged (quadratic convergence sets in after a few).
constexpr int64_t kMaxSweeps = 60;
// Below this many multiply-adds a round of rotations runs on the calling thread: waking the pool
// costs more.
constexpr int64_t kParallelWork = 1 << 16;
// Bytes of working columns per block (with their columns of V): two blocks fit a 1 MB L2 cache.
constexpr int64_t kBlockBytes = 192 << 10;

// Columns p and q of the working matrix (stored as rows of wt) and of V (rows of vt), rotated so that
// the two columns become orthogonal. alpha, beta: the squared norms of the two working columns,
// updated. Returns whether they were not yet orthogonal to `tolerance`.
bool rotate_pair(const JacobiKernels& kernels, double* wp, double* wq, double* vp, double* vq, double& alpha,
                 double& beta, int64_t rows, int64_t cols, double tolerance) {
  const double gamma = kernels.dot(wp, wq, rows);
  if (alpha == 0 || beta == 0 || std::fabs(gamma) <= tolerance * std::sqrt(alpha) * std::sqrt(beta))
    return false;
  // The rotation that diagonalises [[alpha, gamma], [gamma, beta]], the smaller of the two angles.
  const double zeta = (beta - alpha) / (2 * gamma);
  const double t = std::fabs(zeta) > 1e150 ? 0.5 / zeta
                                           : std::copysign(1.0, zeta) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
  const double c = 1 / std::sqrt(1 + t * t);
  const double s = c * t;
  kernels.rotate(wp, wq, rows, c, s);
  kernels.rotate(vp, vq, cols, c, s);
  // The new squared norms follow from the rotation (Hestenes): no second pass over the columns.
  alpha -= t * gamma;
  beta += t * gamma;
  return true;
}

// Makes column i of U (row i of ut, length rows) a unit vector orthogonal to the columns in `done`:
// the standard basis vector with the largest remainder after two Gram-Schmidt passes.
void complete_column(double* ut, int64_t rows, int64_t i, const std::vector<int64_t>& done) {
  std::vector<double> candidate(static_cast<size_t>(rows));
  double best_norm = -1;
  std::vector<double> best;
  for (int64_t k = 0; k < rows; ++k) {
    std::fill(candidate.begin(), candidate.end(), 0.0);
    candidate[k] = 1;
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t j : done) {
        const double* uj = ut + j * rows;
        double projection = 0;
        for (int64_t r = 0; r < rows; ++r) projection += uj[r] * candidate[r];
        for (int64_t r = 0; r < rows; ++r) candidate[r] -= projection * uj[r];
      }
    double norm = 0;
    for (double c : candidate) norm += c * c;
    norm = std::sqrt(norm);
    if (norm > best_norm) {
      best_norm = norm;
      best = candidate;
    }
    if (norm > 0.5) break;  // at least one basis vector keeps half its length: good enough
  }
  for (int64_t r = 0; r < rows; ++r) ut[i * rows + r] = best[r] / best_norm;
}

}  // namespace

Svd svd_jacobi(ThreadPool* pool, int64_t rows, int64_t cols, const double* a, const double* initial_v,
               double tolerance) {
  require(cols >= 1 && rows >= cols, "SVD needs rows >= cols >= 1, got rows = ", rows, ", cols = ", cols);
  // wt holds the working matrix a * V transposed (its columns as contiguous rows), vt holds V
  // transposed: every rotation then streams through contiguous memory.
  std::vector<double> wt(static_cast<size_t>(cols * rows), 0.0);
  std::vector<double> vt(static_cast<size_t>(cols * cols), 0.0);
  if (initial_v) {
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t k = 0; k < cols; ++k) vt[i * cols + k] = initial_v[k * cols + i];
    auto column = [&](int64_t i) {
      double* w = &wt[i * rows];
      const double* v = &vt[i * cols];
      for (int64_t r = 0; r < rows; ++r) {
        const double* ar = a + r * cols;
        double sum = 0;
        for (int64_t k = 0; k < cols; ++k) sum += ar[k] * v[k];
        w[r] = sum;
      }
    };
    if (pool && rows * cols * cols > kParallelWork) {
      pool->parallel_for(cols, column);
    } else {
      for (int64_t i = 0; i < cols; ++i) column(i);
    }
  } else {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < cols; ++i) wt[i * rows + r] = a[r * cols + i];
    for (int64_t i = 0; i < cols; ++i) vt[i * cols + i] = 1;
  }

  // Columns are taken in blocks small enough that two of them (and their columns of V) stay in the
  // L2 cache while all their pairs rotate: the rotations are then bound by arithmetic, not by
  // streaming every column through memory once per pair. A round-robin tournament pairs the blocks:
  // each round pairs every block with another (one sits out when their count is odd), the pairs of
  // a round are disjoint and rotate in parallel, and the rounds of a sweep meet every pair of blocks
  // once; the pairs within a block rotate in the first round.
  const int64_t block = std::max<int64_t>(1, kBlockBytes / (static_cast<int64_t>(sizeof(double)) * (rows + cols)));
  const int64_t blocks = (cols + block - 1) / block;
  const int64_t players = blocks + (blocks % 2);
  std::vector<int64_t> seat(static_cast<size_t>(players));
  std::iota(seat.begin(), seat.end(), 0);
  if (tolerance <= 0) tolerance = 8 * DBL_EPSILON * std::sqrt(static_cast<double>(rows));
  const int64_t tasks = players / 2;
  const bool parallel = pool && tasks > 1 && cols * (rows + cols) * block > kParallelWork;
  std::vector<char> rotated(static_cast<size_t>(tasks));
  const JacobiKernels kernels = best_jacobi_kernels();
  std::vector<double> norms(static_cast<size_t>(cols));  // squared, of the working columns
  auto rotate = [&](int64_t p, int64_t q) {
    return rotate_pair(kernels, &wt[p * rows], &wt[q * rows], &vt[p * cols], &vt[q * cols], norms[p], norms[q],
                       rows, cols, tolerance);
  };

  Svd result;
  result.rows = rows;
  result.cols = cols;
  bool converged = cols == 1;
  for (int64_t sweep = 0; sweep < kMaxSweeps && !converged; ++sweep) {
    ++result.sweeps;
    bool any = false;
    // Exact norms once a sweep, so that the updates of rotate_pair do not drift.
    for (int64_t i = 0; i < cols; ++i) norms[i] = kernels.dot(&wt[i * rows], &wt[i * rows], rows);
    for (int64_t round = 0; round + 1 < players; ++round) {
      auto task = [&](int64_t t) {
        const int64_t first = seat[t], second = seat[players - 1 - t];
        bool changed = false;
        const int64_t a0 = first * block, a1 = std::min(cols, a0 + block);
        const int64_t b0 = second * block, b1 = std::min(cols, b0 + block);
        if (round == 0)
          for (const auto& [lo, hi] : {std::pair<int64_t, int64_t>{a0, a1}, {b0, b1}})
            for (int64_t p = lo; p < hi; ++p)
              for (int64_t q = p + 1; q < hi; ++q) changed = rotate(p, q) || changed;
        for (int64_t p = a0; p < a1; ++p)
          for (int64_t q = b0; q < b1; ++q) changed = rotate(std::min(p, q), std::max(p, q)) || changed;
        rotated[t] = changed;
      };
      if (parallel) {
        pool->parallel_for(tasks, task);
      } else {
        for (int64_t t = 0; t < tasks; ++t) task(t);
      }
      for (char r : rotated) any = any || r;
      std::rotate(seat.begin() + 1, seat.end() - 1, seat.end());
    }
    converged = !any;
  }
  if (!converged) fail(Status::internal, "SVD: one-sided Jacobi did not converge in ", kMaxSweeps, " sweeps");

  // Singular values are the column norms; U the normalised columns, in descending order.
  std::vector<double> lengths(static_cast<size_t>(cols));
  for (int64_t i = 0; i < cols; ++i) lengths[i] = std::sqrt(kernels.dot(&wt[i * rows], &wt[i * rows], rows));
  std::vector<int64_t> order(static_cast<size_t>(cols));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return lengths[x] > lengths[y]; });

  result.s.resize(static_cast<size_t>(cols));
  result.u.assign(static_cast<size_t>(rows * cols), 0.0);
  result.v.assign(static_cast<size_t>(cols * cols), 0.0);
  std::vector<double> ut(static_cast<size_t>(cols * rows));
  // A column that Jacobi left exactly zero (or underflowed) carries no direction: completed below.
  const double smallest = lengths[order[0]] * 1e-250;
  std::vector<int64_t> done, missing;
  for (int64_t i = 0; i < cols; ++i) {
    const int64_t from = order[i];
    result.s[i] = lengths[from];
    for (int64_t r = 0; r < cols; ++r) result.v[r * cols + i] = vt[from * cols + r];
    if (lengths[from] > smallest && lengths[from] > 0) {
      for (int64_t r = 0; r < rows; ++r) ut[i * rows + r] = wt[from * rows + r] / lengths[from];
      done.push_back(i);
    } else {
      result.s[i] = 0;
      missing.push_back(i);
    }
  }
  for (int64_t i : missing) {
    complete_column(ut.data(), rows, i, done);
    done.push_back(i);
  }
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t r = 0; r < rows; ++r) result.u[r * cols + i] = ut[i * rows + r];
  return result;
}

std::vector<double> procrustes_rotation(ThreadPool* pool, int64_t n, const double* m, const double* initial_v,
                                        std::vector<double>* right_vectors) {
  Svd svd = svd_jacobi(pool, n, n, m, initial_v);
  // R = V U^T: R[i][j] = sum_k V[i][k] U[j][k].
  std::vector<double> r(static_cast<size_t>(n * n));
  auto row = [&](int64_t i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += svd.v[i * n + k] * svd.u[j * n + k];
      r[i * n + j] = sum;
    }
  };
  if (pool && n * n * n > kParallelWork) {
    pool->parallel_for(n, row);
  } else {
    for (int64_t i = 0; i < n; ++i) row(i);
  }
  if (right_vectors) *right_vectors = std::move(svd.v);
  return r;
}

}  // namespace quiver
