// TEXMEX vector files (.fvecs float32, .ivecs int32, .bvecs uint8): each vector is a little-endian
// int32 dimension followed by that many values. All rows must share one dimension.
#pragma once

#include <string>

#include "matrix.h"

namespace qvtool {

FloatMatrix read_fvecs(const std::string &path, int64_t max_rows = kAllRows);
FloatMatrix read_bvecs(const std::string &path, int64_t max_rows = kAllRows);  // bytes -> float
IdMatrix read_ivecs(const std::string &path, int64_t max_rows = kAllRows);

void write_fvecs(const std::string &path, const FloatMatrix &m);
// Ids must fit in int32 (the format's type); -1 stays -1.
void write_ivecs(const std::string &path, const IdMatrix &m);

}  // namespace qvtool
