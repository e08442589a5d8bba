// A 16-bit copy of a base's rows for the small batch's GEMV pass (gemv_select.h). One to four queries
// against a base on the device cost what reading the base costs (1M x 128 floats, 512 MB: 0.145 ms on
// an H200, at 3.5 TB/s); read as IEEE half values the same rows take half the bytes. The pass's keys
// then come from rounded rows, which the certificate bounds as it bounds the TF32 pass's (certify.h:
// the rows' residual norms enter the bound), and the finish re-ranks the candidates with the float
// rows: the results are the float32 ones, and queries the bound cannot certify go to the float pass.
//
// An index's DeviceMatrix keeps the copy (device_matrix.h), made by its first small-batch search.
// Only rows whose every value is finite and within half's range (|v| <= 65504) are copied.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/flat/certify.h"

namespace quiver::gpu {

// The GEMV pass reads 16-byte groups of 8 values: rows of a multiple of 8 values, at most what one
// chunk a lane holds (gemv_select.cu's Layout::kHalf).
constexpr int64_t kHalfRowsMaxDim = 256;
inline bool half_rows_fit(int64_t dim) { return dim % 8 == 0 && dim <= kHalfRowsMaxDim; }
// A small batch over an index's base of at least this many bytes (as floats) reads its 16-bit rows
// (knn.cu): below, the float rows take a few microseconds more, not worth another copy of the base.
constexpr int64_t kMinHalfRowsBytes = int64_t(8) << 20;

// A base's 16-bit rows and their certificate statistics (certify.h's kBaseStatsCount numbers, as
// float bits: [0] an upper bound on max ||y||^2 of the float rows, [1] on max ||y - half(y)||^2).
struct HalfRows {
  const __half* rows = nullptr;
  const unsigned* stats = nullptr;
};

// Rounds n rows of dim floats (y, device memory) to half values at `out` (to nearest), raises
// stats[0] and stats[1] to upper bounds on each row's squared norm and squared residual norm (atomic
// maxima: zero them first), and
// sets *out_of_range to 1 when a value is not finite or beyond half's range (the copy is then
// unusable). Enqueued on `stream`.
void launch_half_rows(const float* y, int64_t n, int64_t dim, __half* out, unsigned* stats, unsigned* out_of_range,
                      cudaStream_t stream);

// certify.h's model for the GEMV pass over half rows: the float pass's, with rounded inputs.
CertifyModel half_rows_model(bool l2, int64_t dim);

}  // namespace quiver::gpu
