// The checksum that closes every saved index: a 64-bit multiply-xorshift hash over 8-byte words,
// fast enough to verify gigabytes on load. It detects damage, not tampering.
#pragma once

#include <cstddef>
#include <cstdint>

namespace quiver {

uint64_t checksum64(const uint8_t* data, size_t size);

}  // namespace quiver
