// Optimized product quantization (Ge, He, Ke, Sun, "Optimized Product Quantization", non-parametric
// version): an orthogonal rotation R of the space chosen so that PQ quantizes R x with less error
// than x, found by alternating (1) PQ training and encoding of the rotated sample and (2) the
// orthogonal Procrustes solution R = argmin ||X R^T - decoded||_F, from an SVD.
#pragma once

#include <cstdint>
#include <vector>

namespace quiver {

class Context;
class ThreadPool;

// The defaults reach the plateau of the quantization error on clustered and correlated data (more
// iterations change it by under 1%).
struct OpqOptions {
  int64_t iterations = 25;                 // alternations of PQ update and rotation update
  int64_t initial_kmeans_iterations = 10;  // k-means iterations of the first PQ
  int64_t lloyd_steps = 1;                 // warm-started k-means steps per alternation (>= 1)
  int64_t max_training_vectors = 65536;    // seeded sample of the input
  bool random_start = false;               // start from a seeded random rotation instead of identity
};

// Returns R, dim x dim row-major, orthogonal (R R^T = I to float precision); vectors are used as R x
// (apply_rotation). Trains on a seeded sample of at most options.max_training_vectors of the n x dim
// finite vectors x (host memory). Deterministic for a seed.
// Cost: options.iterations x (two n_train x dim x dim GEMMs, a PQ encoding of the sample, an SVD of
// a dim x dim matrix); at dim 128 a few seconds on two cores, at dim 784 over a minute (the SVD
// dominates): lower iterations or max_training_vectors for large dims.
// Throws invalid_argument for dim < 1, m < 1, m not dividing dim, n < 256, a non-finite value or
// options out of range.
std::vector<float> train_opq_rotation(Context& context, int64_t dim, int64_t m, int64_t n, const float* x,
                                      uint64_t seed);
std::vector<float> train_opq_rotation(Context& context, int64_t dim, int64_t m, int64_t n, const float* x,
                                      uint64_t seed, const OpqOptions& options);

// out (n x dim) = each row of x multiplied by R (out_i = R x_i), i.e. out = x R^T. out may not alias x.
// Parallel over the pool.
void apply_rotation(ThreadPool& pool, const float* rotation, int64_t dim, int64_t n, const float* x,
                    float* out);

}  // namespace quiver
