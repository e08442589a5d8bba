// The objects a multi-device index passes to its parts: float vectors or byte strings, host memory,
// viewed whole, as a slice of rows, or gathered from chosen rows.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/metric/objects.h"

namespace quiver {

struct Batch {
  int64_t n = 0;
  const float* vectors = nullptr;  // n x dim, when dim > 0
  int64_t dim = 0;                 // 0: strings
  Strings strings;

  static Batch of_vectors(int64_t n, const float* x, int64_t dim) { return Batch{n, x, dim, {}}; }
  static Batch of_strings(const Strings& x) { return Batch{x.n, nullptr, 0, x}; }

  // Rows [begin, begin + count), without copying.
  Batch slice(int64_t begin, int64_t count) const;
  Objects objects() const { return dim > 0 ? Objects::of_vectors(n, dim, vectors) : Objects::of_strings(strings); }
};

// Chosen rows of a batch, copied: `batch` views the copy held here (moving keeps it valid).
struct GatheredBatch {
  Batch batch;
  std::vector<float> vectors;
  std::vector<int64_t> offsets;
  std::vector<uint8_t> bytes;
};
GatheredBatch gather(const Batch& x, const std::vector<int64_t>& rows);

}  // namespace quiver
