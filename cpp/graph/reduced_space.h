// A lower-dimensional copy of the vectors for the graph build (graph_build.h), which on wide vectors
// (Fashion-MNIST's 784 floats) spends its time reading rows: the rows projected on the top principal
// subspace of a sample keep who is near whom (distances between projections only drop the
// smallest-variance directions) at a fraction of the bytes. The build's k-NN graph, pruning and
// refining searches run on it; searches of the built index use the full vectors. Fashion-MNIST,
// Graph32, 2 threads: build 29 s -> 10 s, recall@10 at search width 10 0.968 -> 0.962, at 32
// 0.9940 -> 0.9939 (96 directions: 0.956 / 0.9936; 160: 0.963 / 0.9941, build 12 s).
#pragma once

#include <cstdint>
#include <vector>

namespace quiver {

class ThreadPool;

struct ReducedSpace {
  int64_t dim = 0;             // 0: no reduction (the vectors are narrow enough)
  std::vector<float> vectors;  // n x dim
  std::vector<float> basis;    // dim x the input's dim: the directions, one a row
  int64_t basis_rows = 0;      // the rows of the input the directions were found from
};

// Vectors of at least this many floats are reduced...
constexpr int64_t kMinReducedInputDim = 256;
// ... to this many principal directions.
constexpr int64_t kReducedDim = 128;

// The projection of x (n x dim, finite) on the top kReducedDim principal directions of a sample of
// its rows, found by subspace iteration on the sample's covariance and ordered by a Rayleigh-Ritz
// step; deterministic for a seed whatever the thread count. dim < kMinReducedInputDim: an empty
// space.
ReducedSpace reduce_for_build(ThreadPool& pool, const float* x, int64_t n, int64_t dim, uint64_t seed);

// The same projection on `directions` (<= dim) principal directions, whatever dim; n >= 1.
ReducedSpace principal_projection(ThreadPool& pool, const float* x, int64_t n, int64_t dim, int64_t directions,
                                  uint64_t seed);

// Projects rows [space.vectors' rows, n) of x (n x input_dim) on space's directions and appends them.
void extend_reduced_space(ThreadPool& pool, ReducedSpace& space, const float* x, int64_t n, int64_t input_dim);

}  // namespace quiver
