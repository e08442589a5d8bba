// k-means with 256 centroids in the low-dimensional sub-spaces of product quantization. Lloyd's
// algorithm as quiver::kmeans runs it (the same seeded initial centroids and splitting of empty
// clusters), but the assignment uses the PQ encoding kernels, which keep all 256 distances of a point
// in registers: for a few dimensions that is about ten times faster than the exact k-NN engine that
// quiver::kmeans is built on (a GEMM with an inner dimension of 1 to 16 cannot run at speed).
#pragma once

#include <cstdint>

#include "cpp/cluster/kmeans.h"

namespace quiver {

class ThreadPool;

// x: n x dim (n >= 256), finite; centroids: 256 x dim, written. Uses options.iterations and
// options.seed (max_points_per_centroid is ignored: the caller samples). Deterministic for a seed,
// whatever the thread count.
void subspace_kmeans(ThreadPool& pool, int64_t dim, int64_t n, const float* x, const KmeansOptions& options,
                     float* centroids);

}  // namespace quiver
