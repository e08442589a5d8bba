// PQ encoding on the device: each vector's residual to its list's centroid, split into m parts,
// each replaced by the index of its nearest of the 256 sub-quantizer centroids (ties to the smaller
// index), written straight into the vector's arena slot.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

// x: n x dim (rotated space), lists: n, dest: n arena slots; codes + dest[i] * code_stride receives
// vector i's m bytes. centroids nlist x dim, codebooks m x 256 x dsub.
void launch_pq_encode(const float* x, const int32_t* lists, const int32_t* dest, int64_t n, const float* centroids,
                      const float* codebooks, int64_t m, int64_t dsub, int64_t code_stride, uint8_t* codes,
                      int max_shared_bytes, cudaStream_t stream);

}  // namespace quiver::gpu
