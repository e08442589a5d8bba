// The kernels under every GPU metric-space search (range_search.cu, knn_search.cu): one block per
// query, as in the metric-space paper (Tenllado, Prieto Matias, Marin et al.).
//
// A range search with List of Clusters or SSS (hits output over every row) runs the pruned scan,
// whose work follows the pruning: SSS tests the rows against the pivots in pivot-major order (a
// warp's 32 rows per coalesced load, most rows leaving at the first pivot), List of Clusters walks
// only the member lists of the clusters that survive (each member first tested by its distance to
// the centre, |d(x, c) - d(q, c)| > r); each warp queues its candidates and computes
// their distances 32 at a time. Everything else (keys output, brute force, row lists, samples) runs
// the full scan, its threads striding over candidate rows. Per chunk of 256 candidates each thread tests one row (the filter, then the
// method's pruning: List of Clusters' cluster tests, SSS's pivot bounds), the rows that survive are
// compacted in shared memory, and their distances are computed together: a team of lanes per
// vector (vector_distance.cuh), a thread per string (edit_distance.cuh, the query's match masks in
// shared memory). When queries are few, each query's rows are split over several blocks.
//
// Outputs, per launch one of:
//   keys  a distance per candidate (column i - begin of the query's row): the distance, or +inf for
//         a row filtered out or pruned (or a string beyond the edit bound); what k-selection reads.
//   hits  (row, distance) of every candidate within the radius, appended to the query's buffer in
//         no particular order; the count goes on past the buffer's capacity, so a full buffer
//         still reports how many hits there are.
//
// Pruning is conservative by a relative slack that covers the rounding of float distances (the
// tables' and ours), so it never drops a row whose computed distance is within the radius: every
// method finds exactly the rows brute force finds, with the same float distances.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cpp/backend/gpu_metric.h"
#include "cpp/core/metric.h"
#include "cpp/metric/objects.h"
#include "cuda/core/memory_pool.h"
#include "cuda/metric/metric_device.h"

namespace quiver::gpu::metric_space {

constexpr int kScanThreads = 256;
constexpr int kScanWarps = kScanThreads / 32;
// Patterns of up to this many 64-bit words (2 KiB) keep their match masks in shared memory
// (256 x words x 8 bytes: 64 KiB); longer ones in the block's global scratch.
constexpr int64_t kSharedPatternWords = 32;
// Vector queries of up to this many floats (48 KiB) are read from shared memory.
constexpr int64_t kSharedQueryFloats = 12288;
// SSS: up to this many pivot distances (16 KiB) are read from shared memory.
constexpr int64_t kSharedPivots = 4096;

enum class Prune : int32_t { none = 0, list_of_clusters = 1, sss = 2 };

struct ScanArgs {
  // The space.
  Metric metric = Metric::l2;
  int32_t dim = 0;   // 0: strings
  int32_t team = 1;  // lanes per vector distance
  float slack = 0;   // relative slack of the pruning tests (0 for edit distance: integers)
  int64_t rows = 0;
  const float* vectors = nullptr;
  const int64_t* offsets = nullptr;
  const uint8_t* bytes = nullptr;
  // The queries (all of the call's, on the device); block o searches query query_base + slot(o).
  const float* query_vectors = nullptr;
  const int64_t* query_offsets = nullptr;
  const uint8_t* query_bytes = nullptr;
  int64_t query_base = 0;
  const int32_t* block_slot = nullptr;  // slot of block o; nullptr: o
  // Candidates i in [begin, end): row row_list[i], else i * rows / stride_count (a spread sample of
  // stride_count rows), else i.
  int64_t begin = 0, end = 0;
  const int32_t* row_list = nullptr;
  int64_t stride_count = 0;
  // Pruning, the radius (radius_at[slot * radius_stride] when given), the filter.
  Prune prune = Prune::none;
  float radius = 0;
  const float* radius_at = nullptr;
  int64_t radius_stride = 0;
  const int32_t* cluster_of = nullptr;        // List of Clusters (metric_device.h)
  const int32_t* centre_rows = nullptr;
  const int32_t* member_begin = nullptr;
  const int32_t* members = nullptr;
  const float* member_distances = nullptr;    // to the member's centre
  const float* radii = nullptr;
  int64_t clusters = 0;
  const float* centre_distances = nullptr;    // slot x clusters
  const int32_t* stop = nullptr;              // slot: the last cluster scanned
  const float* table = nullptr;               // SSS: pivots x rows
  int64_t pivots = 0;
  const float* pivot_distances = nullptr;     // slot x pivots
  // SSS over vectors, the batched scan: the first pivots in buckets (cpp/metric/sss_buckets.h), and
  // each query o's buckets [lo, hi] for them (bucket_ranges[(o * kPivots + p) * 2 + 0 / 1]).
  int64_t bucket_pivots = 0;
  int64_t bucket_words = 0;
  const float* bucket_edges = nullptr;
  const uint32_t* bucket_bits = nullptr;
  const uint8_t* bucket_ranges = nullptr;
  const uint8_t* filter = nullptr;            // nullptr: every row
  int64_t filter_bits = 0;
  // keys output (or nullptr)
  float* keys = nullptr;                      // slot x ld
  int64_t ld = 0;
  // hits output (or hit_count == nullptr): block o's buffer starts at hit_offset[o] (else
  // o * hit_capacity) and holds hit_capacities[o] (else hit_capacity) hits.
  int32_t* hit_rows = nullptr;
  float* hit_distances = nullptr;
  const int64_t* hit_offset = nullptr;
  int64_t hit_capacity = 0;
  const int64_t* hit_capacities = nullptr;
  unsigned long long* hit_count = nullptr;    // per block o, zeroed before the launch
  unsigned long long* evaluations = nullptr;  // per block o, distances computed added (or nullptr)
  // Strings: each block's scratch (edit_scratch_words) at scratch + scratch_offset[o] + split index x
  // edit_scratch_words(query length). Set by MetricScan::launch.
  uint64_t* scratch = nullptr;
  const int64_t* scratch_offset = nullptr;
  // Shared memory the launch gives: pattern words, query floats, pivot distances.
  int32_t shared_pattern_words = 0;
  int32_t shared_dim = 0;
  int32_t shared_pivots = 0;
};

// The relative slack of the pruning tests for a space: float distances of `dim` components are
// within about (dim + 2) units of the last place of their exact values (ours and the tables'); the
// slack is 8 times that. Edit distances are exact.
float pruning_slack(Metric metric, int64_t dim);

// Global scratch words (uint64) one block needs for a string query of `length` bytes: the vertical
// delta vectors of its threads beyond 64 bytes, the match masks beyond kSharedPatternWords words.
__host__ __device__ inline int64_t edit_scratch_words(int64_t length) {
  const int64_t words = (length + 63) / 64;
  return (words > 1 ? 2 * words * kScanThreads : 0) + (words > kSharedPatternWords ? 256 * words : 0);
}

// What one call of a search keeps on the device: the queries and the filter; it launches the scan.
// All work is ordered on the Resources' stream 0; the caller holds the Session.
class MetricScan {
 public:
  MetricScan(Resources& resources, const MetricDevice& device, const Objects& queries, const RowFilter& filter);

  // Arguments with the space, the queries (query_base 0) and the filter filled in.
  ScanArgs args() const;
  // Scratch bytes a block of query q needs (0 for vectors).
  int64_t scratch_bytes(int64_t q) const;
  // Launches the scan (the pruned one where it applies): blocks o = 0 .. blocks-1, block o on query block_queries[o] (the query whose
  // index is args.query_base + slot(o): passed for the scratch sizes). Splits each query's candidates
  // over several blocks when the blocks are too few for the device; the scratch stays within
  // budget_bytes where it can (one split at least).
  void launch(ScanArgs args, const std::vector<int64_t>& block_queries, int64_t budget_bytes);
  // stop[slot] for slots 0 .. slots-1: the first cluster c whose ball holds the query's ball
  // (d(q, c) < r_c - r, with the slack), else clusters - 1.
  void lc_stop(const ScanArgs& args, int64_t slots, int32_t* stop);

  Resources& resources;
  const MetricDevice& device;
  cudaStream_t stream;

 private:
  PoolBuffer<float> query_vectors_;
  PoolBuffer<int64_t> query_offsets_;
  PoolBuffer<uint8_t> query_bytes_;
  std::vector<int64_t> lengths_;  // strings: each query's length
  PoolBuffer<uint8_t> filter_;
  int64_t filter_bits_ = 0;
  PoolBuffer<uint64_t> scratch_;
  PoolBuffer<int64_t> scratch_offsets_;
};

// Splits a block's candidates take: blocks x splits about twice the SMs, each split at least
// kScanThreads x 4 candidates, at most 65535.
int scan_splits(int64_t blocks, int64_t span, int sm_count);

}  // namespace quiver::gpu::metric_space
