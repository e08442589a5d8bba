#include "cpp/io/checksum.h"

#include <cstring>

namespace quiver {

namespace {
constexpr uint64_t kSeed = 0x71756976657221ULL;  // "quiver!"
constexpr uint64_t kMultiplier = 0x9e3779b97f4a7c15ULL;

uint64_t mix(uint64_t h, uint64_t word) {
  h ^= word;
  h *= kMultiplier;
  return h ^ (h >> 29);
}
}  // namespace

uint64_t checksum64(const uint8_t* data, size_t size) {
  uint64_t h = kSeed ^ (size * kMultiplier);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, 8);  // little-endian hosts only; see io/bytes.h
    h = mix(h, word);
  }
  uint64_t tail = 0;
  for (size_t shift = 0; i < size; ++i, shift += 8) tail |= uint64_t{data[i]} << shift;
  return mix(mix(h, tail), size);
}

}  // namespace quiver
