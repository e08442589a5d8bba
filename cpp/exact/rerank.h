// The last step of every exact search: candidates re-ranked by their exact distance, the best k
// written out in the metric's units, ties to the smaller row, padded with -1 ids.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/exact/database.h"

namespace quiver {

// candidates: rows (in .index) of one query; their keys are overwritten. distances, ids: k entries.
void write_reranked(const Database& db, const float* query, std::vector<Candidate>& candidates,
                    int64_t k, float* distances, int64_t* ids);

}  // namespace quiver
