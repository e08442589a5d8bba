#include "cpp/quantize/training_sample.h"

#include <algorithm>
#include <unordered_set>

#include "cpp/cluster/kmeans_steps.h"

namespace quiver {

std::vector<int64_t> sample_rows(int64_t n, int64_t count, Random& random) {
  std::vector<int64_t> picked;
  if (count * 4 >= n) {
    picked = sample_indices(n, count, random);  // a partial permutation: n entries, but n is small
  } else {
    picked.reserve(static_cast<size_t>(count));
    std::unordered_set<int64_t> seen;
    while (static_cast<int64_t>(picked.size()) < count) {
      const int64_t i = static_cast<int64_t>(random.below(static_cast<uint64_t>(n)));
      if (seen.insert(i).second) picked.push_back(i);
    }
  }
  std::sort(picked.begin(), picked.end());
  return picked;
}

}  // namespace quiver
