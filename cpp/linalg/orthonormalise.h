// Orthonormal rows by Gram-Schmidt, for the small bases of OPQ's random start and the graph build's
// principal directions.
#pragma once

#include <cstdint>

namespace quiver {

// Makes the `count` rows of `rows` (count x dim, row-major, count <= dim) orthonormal in place:
// each row loses its projections on the rows before it (twice over, which keeps the rows orthogonal
// to working precision) and is scaled to unit length. A row the earlier ones span (rank-deficient
// input) is replaced by the next coordinate axis they do not span.
void orthonormalise_rows(double* rows, int64_t count, int64_t dim);

}  // namespace quiver
