// Product quantization (Jégou, Douze, Schmid, "Product quantization for nearest neighbor search"):
// a vector is cut into m sub-vectors of dim / m consecutive dimensions, and each sub-vector is
// replaced by the index of its nearest centroid in that sub-space's own codebook of 256 centroids,
// so that a vector's code is m bytes.
#pragma once

#include <cstdint>
#include <vector>

namespace quiver {

class Context;
class ThreadPool;

// Centroids per sub-quantizer: one byte of code each.
constexpr int64_t kPqCentroids = 256;

struct ProductQuantizer {
  int64_t dim = 0;
  int64_t m = 0;
  std::vector<float> codebooks;  // m x 256 x dsub, row-major: centroid j of sub-space s at (s * 256 + j) * dsub
  int64_t dsub() const { return dim / m; }
};

// Throws invalid_argument unless 1 <= m and m divides dim (dim >= 1).
void check_pq_shape(int64_t dim, int64_t m);

struct PqTrainingOptions {
  int64_t iterations = 25;                   // k-means iterations per sub-space
  int64_t max_training_vectors = 256 * 256;  // seeded sample (256 points per centroid are plenty)
};

// Trains on n x dim finite vectors (host memory): one k-means of 256 centroids per sub-space, on a
// seeded sample of at most options.max_training_vectors vectors (the same sample for every
// sub-space), each sub-space with its own seed derived from `seed`. Runs subspace_kmeans (Lloyd as
// quiver::kmeans, with the PQ encoding kernels for the assignment) on the context's thread pool, or
// gpu::kmeans on a CUDA context. Deterministic for a seed (and, on the CPU, whatever the thread
// count).
// Throws invalid_argument for dim < 1, m < 1, m not dividing dim, n < 256 or a non-finite value.
ProductQuantizer train_product_quantizer(Context& context, int64_t dim, int64_t m, int64_t n,
                                         const float* x, uint64_t seed);
ProductQuantizer train_product_quantizer(Context& context, int64_t dim, int64_t m, int64_t n,
                                         const float* x, uint64_t seed, const PqTrainingOptions& options);

// codes (n x m bytes, row-major) = the nearest centroid of each sub-vector of the n x dim vectors x
// (exact squared L2 in float; ties to the smaller centroid index). Parallel over the pool; the
// widest SIMD kernel of the processor (core/simd_level.h).
void pq_encode(const ProductQuantizer& pq, ThreadPool& pool, int64_t n, const float* x, uint8_t* codes);

// x (n x dim) = the centroids the n x m codes name.
void pq_decode(const ProductQuantizer& pq, int64_t n, const uint8_t* codes, float* x);

}  // namespace quiver
