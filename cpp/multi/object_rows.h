// Rows of Objects (cpp/metric/objects.h: float vectors or byte strings, host memory) as the
// multi-device kinds hand them to their parts: a slice of consecutive rows, or chosen rows copied.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/metric/objects.h"

namespace quiver {

// Rows [begin, begin + count) of x, without copying.
Objects slice_rows(const Objects& x, int64_t begin, int64_t count);

// Chosen rows of some objects, copied: `objects` views the copy held here (moving keeps it valid).
struct GatheredRows {
  Objects objects;
  std::vector<float> vectors;
  std::vector<int64_t> offsets;
  std::vector<uint8_t> bytes;
};
GatheredRows gather_rows(const Objects& x, const std::vector<int64_t>& rows);

}  // namespace quiver
