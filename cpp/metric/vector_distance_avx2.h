// AVX2 copies of the L1 and L-infinity distances of vector_distance.h. They keep the portable loops'
// eight partial results, combined in the same order, so they return bit-identical values. Callable
// only where the processor has AVX2.
#pragma once

#include <cstdint>

namespace quiver {

float l1_distance_avx2(const float* x, const float* y, int64_t dim);
float linf_distance_avx2(const float* x, const float* y, int64_t dim);

}  // namespace quiver
