// The threshold pre-filter's plan (host and device constants): most keys of a long row are far from
// its k smallest, and offering each of them to a WarpSelect queue costs more than reading it. So a
// warp first takes the rank-th smallest key t of a small sample of its row (select_sample.h), then
// streams the row with its limit seeded at t: only keys <= t are offered. When at least k keys of the
// row are <= t, the k best are all among them, ties included, so the result is exactly the plain
// selection's; otherwise (t fell too low: adversarial or heavily tied data) the warp selects the row
// again without a seed, which costs time only.
#pragma once

#include <cstdint>

namespace quiver::gpu::detail {

constexpr int kSampleRuns = 32;   // runs of consecutive columns, evenly spread over the row
constexpr int kSampleRun = 128;   // columns a run: 4 a lane, coalesced
constexpr int kSampleKeys = kSampleRuns * kSampleRun;
constexpr int kSampleQueueRegs = 2;  // the sample's queue: 64 entries, so rank <= 64
constexpr int kSampleMaxRank = kSampleQueueRegs * 32;

// The pre-filter pays off on long rows, a few hundred times k at least.
constexpr int64_t kPrefilterMinCols = 16384;
constexpr int64_t kPrefilterMinColsPerK = 64;  // per entry of the k bucket's queue
constexpr int64_t kPrefilterMaxK = 1024;
// Up to k = 32 the plain selection offers about as many keys as the threshold keeps (its rank's
// margin of 8 dominates): measured, k = 32 with a bias, 10 000 x 128 000: 1.52 ms plain, 1.72 ms
// pre-filtered. So k above this only.
constexpr int64_t kPrefilterMinK = 32;

// t's rank in the sample: about 2k of the row's keys are expected at or below t, plus 8 ranks of
// margin. The count of keys <= t is about Gamma(rank) * cols / kSampleKeys: for k = 100 of 128 000
// (rank 14, 437 keys expected) it falls below k with probability ~1e-5 for i.i.d. keys.
inline int prefilter_rank(int64_t cols, int64_t k) {
  const double per_rank = double(cols) / kSampleKeys;  // row keys one sample rank stands for
  const int64_t rank = static_cast<int64_t>(2.0 * double(k) / per_rank) + 8;
  return static_cast<int>(rank < kSampleMaxRank ? rank : kSampleMaxRank);
}

}  // namespace quiver::gpu::detail
