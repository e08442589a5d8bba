#include "cpp/quantize/opq.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpp/blas/gemm.h"
#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/core/random.h"
#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/linalg/orthonormalise.h"
#include "cpp/linalg/svd.h"
#include "cpp/quantize/product_quantizer.h"
#include "cpp/quantize/training_sample.h"

namespace quiver {

namespace {

// Rows per task of apply_rotation.
constexpr int64_t kRotateBlock = 256;
// X^T Y is summed in this many fixed slices of rows (each by one task, in double, then added in
// order), so that it is the same for every thread count; rows go through the GEMM kChunk at a time.
constexpr int64_t kCrossSlices = 8;
constexpr int64_t kCrossChunk = 512;

// A seeded random orthogonal matrix: Gram-Schmidt (twice) on Gaussian rows.
std::vector<double> random_rotation(int64_t dim, Random& random) {
  std::vector<double> q(static_cast<size_t>(dim * dim));
  for (auto& v : q) v = random.gaussian();
  orthonormalise_rows(q.data(), dim, dim);
  return q;
}

// One Lloyd step of every sub-quantizer: each codeword becomes the mean of the sub-vectors coded
// with it (an unused codeword stays where it is). Parallel over sub-spaces.
void update_codebooks(ProductQuantizer& pq, ThreadPool& pool, int64_t n, const float* x, const uint8_t* codes) {
  const int64_t dim = pq.dim, m = pq.m, dsub = pq.dsub();
  pool.parallel_for(m, [&](int64_t s) {
    std::vector<double> sums(static_cast<size_t>(kPqCentroids * dsub), 0.0);
    std::vector<int64_t> counts(static_cast<size_t>(kPqCentroids), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = codes[i * m + s];
      ++counts[j];
      const float* xi = x + i * dim + s * dsub;
      for (int64_t d = 0; d < dsub; ++d) sums[j * dsub + d] += xi[d];
    }
    float* codebook = &pq.codebooks[s * kPqCentroids * dsub];
    for (int64_t j = 0; j < kPqCentroids; ++j)
      if (counts[j] > 0)
        for (int64_t d = 0; d < dsub; ++d)
          codebook[j * dsub + d] = static_cast<float>(sums[j * dsub + d] / counts[j]);
  });
}

// X^T Y (dim x dim, double) for X = x (n x dim) and Y = decode(codes), without materialising Y.
std::vector<double> cross_product(const ProductQuantizer& pq, ThreadPool& pool, int64_t n, const float* x,
                                  const uint8_t* codes) {
  const int64_t dim = pq.dim;
  const int64_t slices = std::min(kCrossSlices, (n + kCrossChunk - 1) / kCrossChunk);
  std::vector<double> partial(static_cast<size_t>(slices * dim * dim), 0.0);
  pool.parallel_for(slices, [&](int64_t slice) {
    const int64_t begin = n * slice / slices, end = n * (slice + 1) / slices;
    std::vector<float> decoded(static_cast<size_t>(kCrossChunk * dim));
    std::vector<float> xt(static_cast<size_t>(dim * kCrossChunk)), yt(xt.size());
    std::vector<float> product(static_cast<size_t>(dim * dim));
    double* sum = &partial[slice * dim * dim];
    for (int64_t first = begin; first < end; first += kCrossChunk) {
      const int64_t rows = std::min(kCrossChunk, end - first);
      pq_decode(pq, rows, codes + first * pq.m, decoded.data());
      // Columns as rows, for the A B^T GEMM: product[a][b] = sum_i x[i][a] y[i][b].
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t d = 0; d < dim; ++d) {
          xt[d * rows + i] = x[(first + i) * dim + d];
          yt[d * rows + i] = decoded[i * dim + d];
        }
      gemm_abt(dim, dim, rows, 1.0f, xt.data(), rows, yt.data(), rows, product.data(), dim);
      for (int64_t e = 0; e < dim * dim; ++e) sum[e] += product[e];
    }
  });
  for (int64_t slice = 1; slice < slices; ++slice)
    for (int64_t e = 0; e < dim * dim; ++e) partial[e] += partial[slice * dim * dim + e];
  partial.resize(static_cast<size_t>(dim * dim));
  return partial;
}

}  // namespace

void apply_rotation(ThreadPool& pool, const float* rotation, int64_t dim, int64_t n, const float* x, float* out) {
  if (n <= 0) return;
  const int64_t blocks = (n + kRotateBlock - 1) / kRotateBlock;
  pool.parallel_for(blocks, [&](int64_t b) {
    const int64_t begin = b * kRotateBlock, rows = std::min(kRotateBlock, n - begin);
    // out = x R^T: row i of out holds <x_i, row r of R> at column r.
    gemm_abt(rows, dim, dim, 1.0f, x + begin * dim, dim, rotation, dim, out + begin * dim, dim);
  });
}

std::vector<float> train_opq_rotation(Context& context, int64_t dim, int64_t m, int64_t n, const float* x,
                                      uint64_t seed) {
  return train_opq_rotation(context, dim, m, n, x, seed, OpqOptions{});
}

std::vector<float> train_opq_rotation(Context& context, int64_t dim, int64_t m, int64_t n, const float* x,
                                      uint64_t seed, const OpqOptions& options) {
  check_pq_shape(dim, m);
  require(n >= kPqCentroids, "OPQ training needs at least ", kPqCentroids, " vectors, got ", n);
  require(x != nullptr, "OPQ training vectors: null pointer");
  require(options.iterations >= 0 && options.initial_kmeans_iterations >= 0 && options.lloyd_steps >= 1,
          "OPQ options: iterations = ", options.iterations, " and initial_kmeans_iterations = ",
          options.initial_kmeans_iterations, " must be >= 0, lloyd_steps = ", options.lloyd_steps,
          " must be >= 1");
  check_vectors("OPQ training vectors", x, n, dim, false);
  ThreadPool& pool = context.pool();
  Random random(seed);

  // The training sample, in the input's order.
  const int64_t n_train = std::min(n, std::max(kPqCentroids, options.max_training_vectors));
  std::vector<float> sample;
  const float* train = x;
  if (n_train < n) {
    const std::vector<int64_t> rows = sample_rows(n, n_train, random);
    sample.resize(static_cast<size_t>(n_train * dim));
    for (int64_t i = 0; i < n_train; ++i)
      std::memcpy(&sample[i * dim], x + rows[i] * dim, sizeof(float) * dim);
    train = sample.data();
  }

  std::vector<double> rotation(static_cast<size_t>(dim * dim), 0.0);
  if (options.random_start) {
    rotation = random_rotation(dim, random);
  } else {
    for (int64_t d = 0; d < dim; ++d) rotation[d * dim + d] = 1;
  }
  std::vector<float> rotation_f(rotation.begin(), rotation.end());
  if (options.iterations == 0) return rotation_f;
  std::vector<float> rotated(static_cast<size_t>(n_train * dim));
  apply_rotation(pool, rotation_f.data(), dim, n_train, train, rotated.data());

  PqTrainingOptions pq_options;
  pq_options.iterations = options.initial_kmeans_iterations;
  pq_options.max_training_vectors = n_train;
  ProductQuantizer pq = train_product_quantizer(context, dim, m, n_train, rotated.data(), random.next(), pq_options);
  std::vector<uint8_t> codes(static_cast<size_t>(n_train * m));
  std::vector<double> right_vectors;  // the last SVD's V: the next one's starting guess
  for (int64_t it = 0; it < options.iterations; ++it) {
    // (1) The PQ of the rotated sample, warm-started from the previous codebooks: Lloyd steps.
    if (it > 0) apply_rotation(pool, rotation_f.data(), dim, n_train, train, rotated.data());
    for (int64_t step = 0; step < options.lloyd_steps; ++step) {
      pq_encode(pq, pool, n_train, rotated.data(), codes.data());
      update_codebooks(pq, pool, n_train, rotated.data(), codes.data());
    }
    // (2) The rotation that carries the sample closest to its quantized images:
    // argmin ||X R^T - decode(codes)||_F.
    const std::vector<double> cross = cross_product(pq, pool, n_train, train, codes.data());
    rotation = procrustes_rotation(&pool, dim, cross.data(), right_vectors.empty() ? nullptr : right_vectors.data(),
                                   &right_vectors);
    rotation_f.assign(rotation.begin(), rotation.end());
  }
  return rotation_f;
}

}  // namespace quiver
