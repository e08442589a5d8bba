// SSS range search over float vectors, batched: one block tests a tile of queries against a tile of
// rows, so the pivot table is read once per query tile instead of once per query (the metric-space
// paper's one block per query reads all of it for every query, which is what bounds SSS there).
//
// The block tests every (query, row) pair against the buckets of the first pivots
// (cpp/metric/sss_buckets.h: 32 rows a pivot with a few shared loads and logic operations), keeps
// the survivors in a list that the exact tests of every pivot shrink (the table read from global
// memory for the few pairs still alive); the pairs left get their true distance (vector_distance.cuh,
// the same float as every other method) and the hits go to the query's buffer exactly as the
// one-block-per-query scan writes them (metric_scan.h's hits output: the count goes on past the
// capacity). The pruning is the scan's test with its slack, so no row within the radius is ever
// dropped: the results equal brute force's.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/core/memory_pool.h"
#include "cuda/metric/metric_device.h"
#include "cuda/metric/metric_scan.h"

namespace quiver::gpu::metric_space {

// Queries a tile of a batched range search takes (range_search.cu): fewer, larger tiles than the
// one-block-per-query scan's, since each tile costs a few host round trips (counts, packing) and
// the kernel needs no block per query. Their hit buffers share the same budget (a quarter of the
// tile bytes: at least 2048 hits a query at the default 1 GiB).
constexpr int64_t kBatchedTileQueries = 16384;

// Whether a range search of `queries` queries with `prune` takes the batched scan: SSS with pivots
// over vectors, enough queries to share the table (fewer take the one-block-per-query scan), and
// not turned off. QUIVER_SSS_BATCHED=0 turns it off (benchmarks: the paper's scan for comparison),
// 1 takes it for any number of queries (tests).
bool sss_batched_applies(const MetricDevice& device, Prune prune, int64_t queries);

// A range scan of every row with SSS pruning for queries o = 0 .. queries-1, as MetricScan::launch
// runs it with one block o per query (metric_scan.h's ScanArgs and hits output): query o is slot
// block_slot[o] (else o), with index query_base + slot and its pivot distances at
// pivot_distances + slot * pivots; its hits go to its buffer (hit_offset / hit_capacities, else
// o * hit_capacity and hit_capacity), hit_count[o] counting on past it, and evaluations[o] (or
// nullptr) gets the distances computed. The queries' bucket ranges (cpp/metric/sss_buckets.h) take a buffer of
// `pool` for the call. Ordered on `stream`.
void sss_batched_range(const ScanArgs& args, int64_t queries, DevicePool& pool, cudaStream_t stream);

}  // namespace quiver::gpu::metric_space
