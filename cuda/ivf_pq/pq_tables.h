// The parts of the IVF-PQ distance estimate that do not depend on the list being scanned (the
// paper's eq. 11; pq_scan.h says how they combine):
//   entry term [slot] = ||r||^2 + 2 <c, r>   (term 1, r the entry's decoded residual, c its list's
//                                              centroid; once per entry, when it is added)
//   term 3 [query][m][c] = alpha <x part m, q2_mc>   (alpha = -2 for L2, -1 for inner product)
// Term 2 (||x - c||^2) comes from the coarse quantizer.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

// For n entries: slot i = slots[i] (or first_slot + i when slots is null), list lists[i] (or `list`
// when lists is null); terms[slot] = its term 1, from its code in `codes`. centroids nlist x dim,
// codebooks m x 256 x dsub (dim = m * dsub).
void launch_pq_entry_terms(const uint8_t* codes, int64_t code_stride, const int32_t* slots, int64_t first_slot,
                           const int32_t* lists, int32_t list, int64_t n, const float* centroids,
                           const float* codebooks, int64_t m, int64_t dsub, float* terms, cudaStream_t stream);

// term3: rows x m x 256 from x (rows x dim), one strided batched SGEMM over the sub-quantizers.
void pq_term3(cublasHandle_t handle, const float* codebooks, int64_t m, int64_t dsub, const float* x, int64_t rows,
              float alpha, float* term3);

}  // namespace quiver::gpu
