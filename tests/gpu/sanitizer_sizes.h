// Smaller problems under compute-sanitizer. racecheck checks every shared-memory access and runs the
// kernels a hundred times slower or more; scripts/gpu.sh --sanitize sets QUIVER_SANITIZER_SIZES=small
// so that the whole GPU suite fits one call of the device machine. Only row and query counts shrink:
// the shapes keep what makes them awkward (odd counts, partial tiles and chunks, several of each).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace quiver::testing {

inline bool sanitizer_sizes() {
  const char* value = std::getenv("QUIVER_SANITIZER_SIZES");
  return value != nullptr && std::strcmp(value, "small") == 0;
}

// `full` normally, `small` under the sanitizer.
inline int64_t sized(int64_t full, int64_t small) { return sanitizer_sizes() ? small : full; }

// Under racecheck a kernel launch costs tens of milliseconds whatever its size: the suites' small
// distance tiles (many tiles per search) are 4x larger there, fewer launches for the same shapes.
inline int64_t small_tile_bytes() { return sized(64 << 10, 256 << 10); }

// Whether a case that runs no kernel code of its own (cosine: the inner product's kernels on
// normalised rows; k = 1 beside k = 10; pinned beside pageable hosts) is left out under the
// sanitizer, for the same reason.
inline bool skip_under_sanitizer(bool redundant) { return redundant && sanitizer_sizes(); }

}  // namespace quiver::testing
