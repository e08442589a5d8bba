#include "cpp/metric/sss_buckets.h"

#include <algorithm>
#include <cmath>

namespace quiver {

using namespace sss_buckets;

namespace {

// Edges of equal population over pivot p's finite entries (all +inf when there are none: every
// finite value is then in bucket 0).
void pivot_edges(const float* table, int64_t rows, int64_t p, int64_t stride, float* edges) {
  std::vector<float> finite;
  finite.reserve(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    if (std::isfinite(table[r * stride + p])) finite.push_back(table[r * stride + p]);
  std::sort(finite.begin(), finite.end());
  const int64_t m = static_cast<int64_t>(finite.size());
  for (int e = 0; e < kEdges; ++e) edges[e] = m == 0 ? INFINITY : finite[static_cast<size_t>((e + 1) * m / kBuckets)];
}

// Sets the bits of rows first .. last-1 (their buckets, a wild row's kBuckets) for pivot p, then
// propagates at_least(p, b) |= at_least(p, b + 1) from the top down over their words.
void add_rows(SssBuckets& out, const float* table, int64_t stride, int64_t p, int64_t first, int64_t last) {
  const float* edges = out.edges.data() + p * kEdges;
  const int64_t words = out.words();
  uint32_t* at_least = out.bits.data() + p * (kBuckets + 1) * words;
  for (int64_t row = first; row < last; ++row) {
    const float v = table[row * stride + p];
    const int bucket = std::isfinite(v) ? bucket_of(edges, v) : kBuckets;
    at_least[bucket * words + row / 32] |= 1u << (row % 32);
  }
  for (int b = kBuckets - 1; b >= 0; --b)
    for (int64_t w = first / 32; w < (last + 31) / 32; ++w) at_least[b * words + w] |= at_least[(b + 1) * words + w];
}

}  // namespace

SssBuckets build_sss_buckets(const float* table, int64_t rows, int64_t pivots, int64_t stride) {
  SssBuckets out;
  out.pivots = std::min(pivots, kPivots);
  out.rows = rows;
  out.edge_rows = rows;
  out.edges.resize(static_cast<size_t>(out.pivots * kEdges));
  out.bits.assign(static_cast<size_t>(out.pivots * (kBuckets + 1) * out.words()), 0u);
  for (int64_t p = 0; p < out.pivots; ++p) {
    pivot_edges(table, rows, p, stride, out.edges.data() + p * kEdges);
    add_rows(out, table, stride, p, 0, rows);
  }
  return out;
}

SssBuckets grown_sss_buckets(const SssBuckets& old, const float* table, int64_t rows, int64_t stride) {
  if (rows > 2 * old.edge_rows) return build_sss_buckets(table, rows, old.pivots, stride);
  // The old words into lines of the new length, then the new rows.
  SssBuckets out;
  out.pivots = old.pivots;
  out.rows = rows;
  out.edge_rows = old.edge_rows;
  out.edges = old.edges;
  out.bits.assign(static_cast<size_t>(out.pivots * (kBuckets + 1) * out.words()), 0u);
  for (int64_t line = 0; line < out.pivots * (kBuckets + 1); ++line)
    std::copy_n(old.bits.begin() + line * old.words(), old.words(), out.bits.begin() + line * out.words());
  for (int64_t p = 0; p < out.pivots; ++p) add_rows(out, table, stride, p, old.rows, rows);
  return out;
}

}  // namespace quiver
