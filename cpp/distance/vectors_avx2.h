// AVX2 copies of the exact distances of vectors.h for the re-ranking of long vectors. They keep the
// portable loops' eight partial sums, combined in the same order, and never fuse a multiply with an
// add, so they return bit-identical values. Callable only where the processor has AVX2.
#pragma once

#include <cstdint>

namespace quiver {

float dot_avx2(const float* x, const float* y, int64_t dim);
float squared_l2_avx2(const float* x, const float* y, int64_t dim);

}  // namespace quiver
