// The seeded sample of training vectors that PQ and OPQ train on.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/core/random.h"

namespace quiver {

// count distinct indices of [0, n) chosen by `random`, in increasing order (so that the rows are read
// in memory order). Memory O(count), not O(n): rejection sampling when count is a small part of n.
std::vector<int64_t> sample_rows(int64_t n, int64_t count, Random& random);

}  // namespace quiver
