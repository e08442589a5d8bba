#include "cpp/linalg/orthonormalise.h"

#include <algorithm>
#include <cmath>

namespace quiver {

namespace {
// A row shorter than this after its projections are gone lies in the span of the rows before it.
constexpr double kSpannedNorm = 1e-9;
}  // namespace

void orthonormalise_rows(double* rows, int64_t count, int64_t dim) {
  int64_t next_axis = 0;
  for (int64_t i = 0; i < count; ++i) {
    double* r = rows + i * dim;
    for (;;) {
      for (int pass = 0; pass < 2; ++pass)
        for (int64_t j = 0; j < i; ++j) {
          const double* s = rows + j * dim;
          double projection = 0;
          for (int64_t d = 0; d < dim; ++d) projection += r[d] * s[d];
          for (int64_t d = 0; d < dim; ++d) r[d] -= projection * s[d];
        }
      double norm = 0;
      for (int64_t d = 0; d < dim; ++d) norm += r[d] * r[d];
      norm = std::sqrt(norm);
      if (norm > kSpannedNorm) {
        for (int64_t d = 0; d < dim; ++d) r[d] /= norm;
        break;
      }
      // i < count <= dim rows span less than everything: some axis is found.
      std::fill(r, r + dim, 0.0);
      r[next_axis++ % dim] = 1;
    }
  }
}

}  // namespace quiver
