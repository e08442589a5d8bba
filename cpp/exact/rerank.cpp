#include "cpp/exact/rerank.h"

#include <algorithm>

#include "cpp/distance/vectors.h"

namespace quiver {

void write_reranked(const Database& db, const float* query, std::vector<Candidate>& candidates,
                    int64_t k, float* distances, int64_t* ids) {
  const bool l2 = db.metric == Metric::l2;
  for (Candidate& c : candidates) {
    const float exact = exact_distance(db.metric, query, db.x + c.index * db.dim, db.dim);
    c.key = l2 ? exact : -exact;  // smaller is better
  }
  const int64_t found = std::min<int64_t>(k, static_cast<int64_t>(candidates.size()));
  std::partial_sort(candidates.begin(), candidates.begin() + found, candidates.end());
  for (int64_t i = 0; i < k; ++i) {
    if (i < found) {
      const Candidate& c = candidates[i];
      distances[i] = l2 ? c.key : -c.key;
      ids[i] = db.ids ? db.ids[c.index] : c.index;
    } else {
      distances[i] = missing_distance(db.metric);
      ids[i] = -1;
    }
  }
}

}  // namespace quiver
