// What a metric-space index holds and is asked about: n objects of one kind, float vectors (dim
// floats each, row-major) or byte strings (offsets + bytes, as the C ABI passes them). One view
// type for both, so List of Clusters, SSS and brute force are written once for every space.
#pragma once

#include <cstdint>

namespace quiver {

// Longest byte string accepted (objects and queries).
constexpr int64_t kMaxStringBytes = int64_t{1} << 20;

// n byte strings: string i is bytes[offsets[i], offsets[i + 1]). offsets has n + 1 entries,
// non-decreasing, offsets[0] >= 0. Strings are bytes, not text: any value, no terminator.
struct Strings {
  int64_t n = 0;
  const int64_t* offsets = nullptr;
  const uint8_t* bytes = nullptr;

  const uint8_t* data(int64_t i) const { return bytes + offsets[i]; }
  int64_t length(int64_t i) const { return offsets[i + 1] - offsets[i]; }
};

// Throws invalid_argument naming `what` and the first offending string: NULL offsets (n > 0),
// NULL bytes with a nonempty string, offsets decreasing or negative, a string longer than
// kMaxStringBytes.
void check_strings(const char* what, const Strings& strings);

// n objects of one space. Vectors: dim >= 1 and vectors (n x dim floats); strings: dim == 0 and
// strings. Host memory.
struct Objects {
  int64_t n = 0;
  int64_t dim = 0;
  const float* vectors = nullptr;
  Strings strings;

  bool are_strings() const { return dim == 0; }
  const float* vector(int64_t i) const { return vectors + i * dim; }

  static Objects of_vectors(int64_t n, int64_t dim, const float* x) { return Objects{n, dim, x, {}}; }
  static Objects of_strings(const Strings& s) { return Objects{s.n, 0, nullptr, s}; }
};

}  // namespace quiver
