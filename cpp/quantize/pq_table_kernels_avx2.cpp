#include "cpp/quantize/pq_table_kernels.h"

namespace quiver {

namespace {
#include "cpp/quantize/pq_table_kernels.inc"
}  // namespace

PqTableKernels pq_table_kernels_avx2() { return PqTableKernels{inner_products, distances, combine}; }

}  // namespace quiver
