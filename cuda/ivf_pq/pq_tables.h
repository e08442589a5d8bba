// The parts of the IVF-PQ distance estimate that do not depend on the list being scanned (the
// paper's eq. 11; pq_scan.h says how they combine):
//   entry term [slot] = ||r||^2 + 2 <c, r>   (term 1, r the entry's decoded residual, c its list's
//                                              centroid; once per entry, when it is added)
//   term 3 [query][m][c] = alpha <x part m, q2_mc>   (alpha = -2 for L2, -1 for inner product; built
//                                                     inside each scan block, pq_scan.h)
// Term 2 (||x - c||^2) comes from the coarse quantizer.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

// For n entries: slot i = slots[i] (or first_slot + i when slots is null), list lists[i] (or `list`
// when lists is null); terms[slot] = its term 1, from its code in `codes`. centroids nlist x dim,
// codebooks m x 256 x dsub (dim = m * dsub).
void launch_pq_entry_terms(const uint8_t* codes, int64_t code_stride, const int32_t* slots, int64_t first_slot,
                           const int32_t* lists, int32_t list, int64_t n, const float* centroids,
                           const float* codebooks, int64_t m, int64_t dsub, float* terms, cudaStream_t stream);

// Bounds of each sub-quantizer's codewords, for the 16-bit tables' scaling: bounds[0 .. m * dsub) the
// centres (mean codeword of each sub-quantizer), bounds[m * dsub + s] the radius of sub-quantizer s
// (largest distance of a codeword to its centre, rounded up). Then for any query part x_s,
// <x_s, q2_sc> lies within <x_s, centre_s> +- ||x_s|| radius_s.
inline int64_t pq_codebook_bounds_floats(int64_t m, int64_t dsub) { return m * dsub + m; }
void launch_pq_codebook_bounds(const float* codebooks, int64_t m, int64_t dsub, float* bounds, cudaStream_t stream);

}  // namespace quiver::gpu
