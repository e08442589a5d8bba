// The stored graph of a graph index: one row-major rows x degree array of int32 neighbour rows, -1
// where a row has fewer than `degree` neighbours (kEmptySlot). Kept a plain contiguous array because
// the GPU search (SONG, cuda/graph/) reads exactly this layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace quiver {

// An unused adjacency slot; used slots come first in a row.
constexpr int32_t kEmptySlot = -1;

struct FixedDegreeGraph {
  int64_t rows = 0;
  int32_t degree = 0;
  std::vector<int32_t> adjacency;  // rows x degree

  FixedDegreeGraph() = default;
  FixedDegreeGraph(int64_t rows_, int32_t degree_)
      : rows(rows_), degree(degree_), adjacency(static_cast<size_t>(rows_ * degree_), kEmptySlot) {}

  int32_t* row(int64_t r) { return adjacency.data() + r * degree; }
  const int32_t* row(int64_t r) const { return adjacency.data() + r * degree; }
  // Used slots of row r (they come first).
  int32_t used(int64_t r) const {
    const int32_t* p = row(r);
    int32_t u = 0;
    while (u < degree && p[u] != kEmptySlot) ++u;
    return u;
  }
};

}  // namespace quiver
