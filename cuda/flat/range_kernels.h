// The kernels of the GPU range search (cpp/backend/gpu_range.h, driven by range_search.cu): the
// per-query threshold on the GEMM's approximate keys, the filter that reads a distance tile once and
// keeps the exact hits, and the steps that turn the hits into per-query sorted lists.
//
// Keys, as in the exact search: L2 K(y) = ||y||^2 - 2 <x, y> (the tile holds -2 <x, y>, the filter
// adds the row's norm), similarities K(y) = -<x, y>; smaller is closer. A hit is a row whose exact
// float32 value (exact_distances.h's sum, in its order) meets the radius: L2 sum (x_i - y_i)^2 <=
// radius, similarities sum x_i y_i >= radius.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/flat/certify.h"

namespace quiver::gpu {

// thresholds[q] = an upper bound on the approximate key (the GEMM's, rounded as the filter adds the
// norm) of any row whose exact value meets `radius` for query q, from certify.h's bound on the
// GEMM's error: model (the GEMM kind), query_stats (launch_query_stats of the queries), base_stats
// (launch_base_stats or launch_norms_max of the base). +inf where the bound cannot be evaluated
// (every row is then a candidate). L2 only: when wide is not null, counts into *wide the queries
// whose error bound exceeds band_fraction times the radius (candidates then far outnumber hits).
// Device memory.
void launch_range_thresholds(const CertifyModel& model, float radius, const double* query_stats,
                             const unsigned* base_stats, int64_t nq, double band_fraction, float* thresholds,
                             unsigned* wide, cudaStream_t stream);

// One distance tile of a block of queries against base rows [c0, c0 + cols).
struct RangeTile {
  const float* tile = nullptr;  // rows x ld (row-major: row = query), 16-byte aligned, ld % 4 == 0
  int64_t ld = 0, rows = 0, cols = 0, c0 = 0;
  const float* bias = nullptr;        // L2: the norms of rows c0 .. c0 + cols - 1; else nullptr
  const float* thresholds = nullptr;  // rows (launch_range_thresholds)
  const uint8_t* filter = nullptr;    // allowed rows (gpu.h's RowFilter bits, on the device), or nullptr
  int64_t filter_bits = 0;
  const float* base = nullptr;     // the whole base, row-major, dim floats a row
  const float* queries = nullptr;  // the block's rows queries, dim floats each
  int64_t dim = 0;
  float radius = 0.f;
  bool l2 = true;
};

// Where the filter appends its hits (device memory). tally[0] counts every hit found (also those
// beyond capacity, which are dropped), tally[1 + r] those of query r of the block; both zeroed
// before the block's first tile. Hit i (i < min(tally[0], capacity)): query[i] (of the block),
// row[i] (of the base), value[i] (the exact distance or product), in no particular order.
struct RangeHitBuffer {
  unsigned long long* tally = nullptr;
  int32_t* query = nullptr;
  int32_t* row = nullptr;
  float* value = nullptr;
  int64_t capacity = 0;
};

// Appends the tile's hits: rows whose key passes the query's threshold and the filter, checked by
// their exact value. sm_count sizes the grid.
void launch_range_filter(const RangeTile& tile, const RangeHitBuffer& out, int sm_count, cudaStream_t stream);

// The hits (query, row, value: count entries, as the filter wrote them) of queries qa <= q < qb, as
// sort keys: query q's at keys[offsets[q - qa] ..), offsets[q - qa + 1]) in any order, cursor
// (qb - qa counters, zeroed) counting them. A key orders (distance, row): closest first, then the
// smaller row.
void launch_range_scatter(const int32_t* query, const int32_t* row, const float* value, int64_t count, int32_t qa,
                          int32_t qb, const int64_t* offsets, unsigned long long* cursor, bool l2, uint64_t* keys,
                          cudaStream_t stream);

// rows[i] and distances[i] (the metric's value) of keys[i], for count keys.
void launch_range_decode(const uint64_t* keys, int64_t count, bool l2, int64_t* rows, float* distances,
                         cudaStream_t stream);

}  // namespace quiver::gpu
