// Exact range search on the CPU: the same tiles as k-NN, a fixed threshold per query, and an exact
// check of every candidate near the boundary.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/core/result_memory.h"
#include "cpp/exact/database.h"

namespace quiver {

class ThreadPool;

// Results in CSR form (see qv_range_result_t).
struct RangeResult {
  std::vector<int64_t> lims;  // nq + 1 offsets
  ResultVector<int64_t> ids;  // result_memory.h: kept for the next result once freed
  ResultVector<float> distances;
};

// L2: every vector with squared distance <= radius; inner product / cosine: similarity >= radius.
// Each query's hits are sorted closest first.
RangeResult exact_range(ThreadPool& pool, const Database& db, const Queries& queries, float radius,
                        const IdFilter& filter);

}  // namespace quiver
