// NumPy .npy files (format versions 1, 2 and 3): 2-D, C order, little-endian float32, float64,
// uint8, int32 or int64 — the types ANN data sets and ground-truth files come in.
#pragma once

#include <string>

#include "matrix.h"

namespace qvtool {

// Any supported dtype, converted to float32 (float64 is rounded).
FloatMatrix read_npy_vectors(const std::string &path, int64_t max_rows = kAllRows);
// Integer dtypes only (int32, int64, uint8), for ground-truth ids.
IdMatrix read_npy_ids(const std::string &path, int64_t max_rows = kAllRows);

}  // namespace qvtool
