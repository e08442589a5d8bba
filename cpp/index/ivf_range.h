// Range search of a CPU inverted-file index (also used by the GPU kind over host copies of its
// lists): every entry of the nprobe nearest lists within the radius. Distances are exact float32 for
// IVF-Flat and for IVF-PQ with ",Refine" (against the raw vectors), PQ distances otherwise.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/exact/range.h"
#include "cpp/index/ivf_lists.h"
#include "cpp/index/ivf_model.h"

namespace quiver {

// queries: nq x dim in the model space; raw_queries: the same in the caller's space (IVF-PQ refine).
// list_tables: make_pq_list_tables of the model (IVF-PQ). L2: squared distance <= radius; inner
// product: similarity >= radius. Hits of each query closest first, ties to the smaller id.
RangeResult ivf_range_search(ThreadPool& pool, const IvfModel& model, const InvertedLists& lists,
                             const std::vector<float>& list_tables, int64_t nq, const float* queries,
                             const float* raw_queries, float radius, int64_t nprobe, const IdFilter& filter);

}  // namespace quiver
