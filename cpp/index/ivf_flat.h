// IVF-Flat search on the CPU. Queries are grouped by the lists they probe, so each list's vectors are
// read once per batch of queries and multiplied with all of its queries in one GEMM (blas/gemm.h)
// instead of once per query; a SIMD scan (select/scan.h) then keeps each query's best keys, and the
// survivors are re-ranked with exact float32 distances (as the exact engine does).
#pragma once

#include <cstdint>

#include "cpp/index/ivf_lists.h"
#include "cpp/index/ivf_model.h"
#include "cpp/select/topk.h"

namespace quiver {

// The k nearest entries of each of nq queries (model space, nq x dim) among the entries of their
// nprobe nearest lists: distances in the model's metric units (exact float32), closest first, ties
// to the smaller id; ids of the entries, -1 (and missing_distance) where fewer than k are found.
// Only ids the filter allows are returned. Parallel over the pool.
void ivf_flat_search(ThreadPool& pool, const IvfModel& model, const InvertedLists& lists, int64_t nq,
                     const float* queries, int64_t k, int64_t nprobe, const IdFilter& filter,
                     float* distances, int64_t* ids);

}  // namespace quiver
