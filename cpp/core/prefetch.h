// Software prefetch of a span of memory the caller is about to read at a place the hardware
// prefetchers cannot guess (a row chosen by an index, a list's next entry).
#pragma once

#include <cstdint>

namespace quiver {

constexpr int64_t kCacheLineBytes = 64;

// Asks for the cache lines of bytes [p, p + bytes) to be brought in (a hint, never a fault).
inline void prefetch_bytes(const void* p, int64_t bytes) {
  const char* first = static_cast<const char*>(p);
  for (int64_t offset = 0; offset < bytes; offset += kCacheLineBytes) __builtin_prefetch(first + offset);
}

}  // namespace quiver
