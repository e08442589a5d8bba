// IDX files (the MNIST / Fashion-MNIST format), gzip-compressed or raw: a big-endian header
// (0, 0, type, rank, then rank uint32 sizes) followed by the values. Only unsigned-byte data is
// read; each item is flattened to one float32 vector of its 0..255 values (28x28 -> 784-d).
#pragma once

#include <string>

#include "matrix.h"

namespace qvtool {

FloatMatrix read_idx_ubyte(const std::string &path, int64_t max_rows = kAllRows);

}  // namespace qvtool
