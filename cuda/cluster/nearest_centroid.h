// k-means' assignment step: every point's nearest centroid under L2, exactly as the exact search with
// k = 1 answers it (the same labels and distances), from one float32 GEMM kernel that keeps each
// point's two best keys in registers (no distance tile, no selection pass) and certifies the best;
// the few points it cannot certify are ranked by their exact distances to every centroid.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

// For each of the n points (rows of dim floats at x, device memory): labels[i] = the centroid of the
// k (rows at centroids, their squared norms from launch_row_norms at centroid_norms) with the
// smallest exact float32 distance (exact_distances.h), the lowest index among equals;
// distances[i] = that distance. listed: device workspace of n + 1 int32; afterwards listed[0] is the
// number of points the GEMM could not certify (of the last 2^30 - 1, for more points).
void launch_nearest_centroid(const float* x, int64_t n, int64_t dim, const float* centroids,
                             const float* centroid_norms, int64_t k, float* distances, int64_t* labels,
                             int32_t* listed, cudaStream_t stream);

}  // namespace quiver::gpu
