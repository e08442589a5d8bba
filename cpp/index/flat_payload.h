// The saved form of a Flat index, the same on every device: its ids, then its vectors.
#pragma once

#include <cstdint>
#include <vector>

namespace quiver {

class ByteReader;
class ByteWriter;

struct FlatPayload {
  std::vector<int64_t> ids;
  std::vector<float> vectors;
};

void write_flat_payload(ByteWriter& out, const int64_t* ids, const float* vectors, int64_t count, int64_t dim);
// Throws corrupt_data on truncated data or non-finite vectors.
FlatPayload read_flat_payload(ByteReader& in, int64_t count, int64_t dim);

}  // namespace quiver
