// The inner loop of PQ encoding: the nearest of a sub-space's 256 codewords for a run of sub-vectors,
// by exact squared L2 in float (ties to the smaller index). One kernel per instruction set, chosen at
// run time; their sums may differ in the last bit (fused or separate multiply-add), so on a near-tie
// they may pick different codewords of (nearly) equal distance.
#pragma once

#include <cstdint>

namespace quiver {

// Sub-vector i is x + i * stride (dsub floats); its code is written to codes[i * code_stride].
// codebook_t: the sub-space's codebook transposed, dsub x 256 (codeword j's dimension d at d * 256 + j).
using PqAssignFn = void (*)(const float* x, int64_t stride, int64_t rows, int64_t dsub,
                            const float* codebook_t, uint8_t* codes, int64_t code_stride);

void pq_assign_portable(const float* x, int64_t stride, int64_t rows, int64_t dsub, const float* codebook_t,
                        uint8_t* codes, int64_t code_stride);
void pq_assign_avx2(const float* x, int64_t stride, int64_t rows, int64_t dsub, const float* codebook_t,
                    uint8_t* codes, int64_t code_stride);
void pq_assign_avx512(const float* x, int64_t stride, int64_t rows, int64_t dsub, const float* codebook_t,
                      uint8_t* codes, int64_t code_stride);

// The best kernel this processor runs (core/simd_level.h).
PqAssignFn best_pq_assign();

}  // namespace quiver
