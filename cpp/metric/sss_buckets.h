// Bucketed pivot distances, SSS's first filter (sss.h): the first pivots' distances cut into
// kBuckets ranges of equal population, and a bitmask of the rows in each range, so that a query
// tests 32 rows against a pivot with a few word operations instead of a table entry per row (the
// table, row-major, costs a cache line a row for every pivot tested). Rows are counted in tiles of
// kTileRows (the bitmasks padded to whole tiles), the GPU's unit of work.
//
// Per pivot p, edges e_1 <= ... <= e_{kBuckets-1} (quantiles of its finite table entries); a value
// v falls in bucket bucket_of(v), the number of edges <= v (0 .. kBuckets-1). A query keeps for p
// the rows whose distance t may pass the exact test, t in [lo, hi] (kept_interval): every such row
// has bucket_of(lo) <= bucket_of(t) <= bucket_of(hi), so keeping the rows of those buckets never
// drops a row the exact test keeps; the exact tests then run on the few rows left. A table entry
// that is not finite (a distance that overflowed) is "wild": in every bucket, as the exact test never
// excludes it.
//
// Bits, for bucket pivot p and b = 0 .. kBuckets: at_least(p, b) = the rows of bucket >= b, and
// the wild ones (at_least(p, kBuckets): the wild rows alone), a bit a row (bit i of word w: row
// 32 w + i), the words of all tiles in a row so that a query streams through each it needs. The
// rows kept for buckets [lo, hi]: at_least(p, lo) & (~at_least(p, hi + 1) | at_least(p, kBuckets)).
#pragma once

#include <cstdint>
#include <vector>

// Helpers the CPU and the GPU scans share are callable from device code too.
#ifdef __CUDACC__
#define QV_SSS_FN __host__ __device__ inline
#else
#define QV_SSS_FN inline
#endif

namespace quiver {

namespace sss_buckets {
constexpr int kBuckets = 32;
constexpr int kEdges = kBuckets - 1;
constexpr int64_t kPivots = 16;      // the first pivots bucketed (fewer when there are fewer)
constexpr int kTileRows = 128;
constexpr int kTileWords = kTileRows / 32;
}  // namespace sss_buckets

// The rows of a word that exist when `left` rows remain from its first (bit i: row first + i).
QV_SSS_FN uint32_t low_rows(int64_t left) { return left >= 32 ? ~0u : left <= 0 ? 0u : (1u << left) - 1u; }

// The rows a bucketed pivot keeps for buckets [lo, hi], from the same word of at_least(p, lo),
// at_least(p, hi + 1) and at_least(p, kBuckets) (module comment).
QV_SSS_FN uint32_t kept_rows(uint32_t at_least_lo, uint32_t above_hi, uint32_t wild) {
  return at_least_lo & (~above_hi | wild);
}

struct SssBuckets {
  int64_t pivots = 0;          // bucketed pivots: min(sss_buckets::kPivots, the table's)
  int64_t rows = 0;
  int64_t edge_rows = 0;       // the rows the edges were cut from
  std::vector<float> edges;    // pivots x kEdges, non-decreasing per pivot
  std::vector<uint32_t> bits;  // pivots x (kBuckets + 1) x words() (module comment)

  int64_t tiles() const { return (rows + sss_buckets::kTileRows - 1) / sss_buckets::kTileRows; }
  int64_t words() const { return tiles() * sss_buckets::kTileWords; }
  const uint32_t* at_least(int64_t p, int b) const {
    return bits.data() + (p * (sss_buckets::kBuckets + 1) + b) * words();
  }
  // alive[i] &= the rows of word first + i that pivot p keeps for buckets [lo, hi], i < count.
  void keep(int64_t p, int lo, int hi, int64_t first, int64_t count, uint32_t* alive) const {
    const uint32_t* at_least_lo = at_least(p, lo) + first;
    const uint32_t* above_hi = at_least(p, hi + 1) + first;
    const uint32_t* wild = at_least(p, sss_buckets::kBuckets) + first;
    for (int64_t i = 0; i < count; ++i) alive[i] &= kept_rows(at_least_lo[i], above_hi[i], wild[i]);
  }
  int64_t memory_bytes() const {
    return static_cast<int64_t>(edges.capacity() * sizeof(float) + bits.capacity() * sizeof(uint32_t));
  }
};

// The buckets of a table of `rows` x `stride` distances, row-major (table[row * stride + p] for
// pivot p < pivots <= stride).
SssBuckets build_sss_buckets(const float* table, int64_t rows, int64_t pivots, int64_t stride);

// The buckets of `old`'s table grown to `rows` rows (its first old.rows unchanged): the new rows go
// into the existing edges' buckets (any edges keep the filter conservative; they are cut anew, by a
// full build, once the table has doubled since they were, so that the buckets stay of about equal
// population).
SssBuckets grown_sss_buckets(const SssBuckets& old, const float* table, int64_t rows, int64_t stride);

// The bucket of v for a pivot's edges (the number of edges <= v; a NaN counts as below every edge).
QV_SSS_FN int bucket_of(const float* edges, float v) {
  int low = 0, high = sss_buckets::kEdges;  // the answer lies in [low, high]
  while (low < high) {
    const int middle = (low + high) / 2;
    if (edges[middle] <= v) low = middle + 1;
    else high = middle;
  }
  return low;
}

}  // namespace quiver
