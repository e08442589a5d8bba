// Row filters for the GPU tests: a bitset that may be off, and a random one.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "cpp/backend/gpu.h"

namespace quiver::testing {

struct TestFilter {
  bool on = false;
  std::vector<uint8_t> bits;
  int64_t nbits = 0;
  gpu::RowFilter view() const { return on ? gpu::RowFilter{bits.data(), nbits} : gpu::RowFilter{}; }
  bool allows(int64_t row) const { return !on || (row < nbits && ((bits[size_t(row >> 3)] >> (row & 7)) & 1)); }
};

// About `keep` of rows 0 .. nbits-1 allowed (rows from nbits on are not).
inline TestFilter random_filter(int64_t nbits, double keep, uint32_t seed) {
  TestFilter f;
  f.on = true;
  f.nbits = nbits;
  f.bits.assign(size_t((nbits + 7) / 8 + 1), 0);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t r = 0; r < nbits; ++r)
    if (u(gen) < keep) f.bits[size_t(r >> 3)] |= uint8_t(1u << (r & 7));
  return f;
}

}  // namespace quiver::testing
