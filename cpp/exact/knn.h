// Exact k-nearest-neighbour search on the CPU: blocked GEMM (OpenBLAS) for the inner products, a
// SIMD scan that keeps only keys under the running k-th best, then exact re-ranking of the survivors.
#pragma once

#include <cstdint>

#include "cpp/exact/database.h"

namespace quiver {

// Writes nq x k distances (in the metric's units) and ids, closest first, padded with
// missing_distance(metric) and id -1. Parallel over pool.
void exact_knn(ThreadPool& pool, const Database& db, const Queries& queries, int64_t k,
               const IdFilter& filter, float* distances, int64_t* ids);

}  // namespace quiver
