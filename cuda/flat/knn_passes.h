// How the last gpu::knn call of this thread answered its queries in the fp32 mode (knn.cu's passes),
// and in every mode how many chunks of a host base its first pass searched, for tests and benchmarks
// to see which path ran. CUDA-free.
#pragma once

#include <algorithm>
#include <cstdint>

namespace quiver::gpu {

// The fp32 mode's certified passes keep k plus a quarter more candidates (at least 16 more): room
// for the rows whose approximate distance is within the bound of the k-th. Up to kMaxCertifiedK,
// where that reaches the largest selection (2048); beyond it the direct pass answers every query.
constexpr int64_t certified_candidate_count(int64_t k) { return k + std::max<int64_t>(16, k / 4); }
constexpr int64_t kMaxCertifiedK = 1639;

struct KnnPassCounts {
  int64_t tf32 = 0;    // certified by the TF32 pass
  int64_t fp16 = 0;    // certified by the same pass in IEEE half tiles (knn.cu's half_tiles_take)
  int64_t sgemm = 0;   // certified by an SGEMM pass
  int64_t direct = 0;  // answered by the direct pass (exact distances to every row)
  int64_t chunks = 0;  // chunks of the base searched as they came to the device (0: resident first)
  int64_t gemv = 0;    // queries whose SGEMM pass ran as one GEMV with its selection (gemv_select.h)
  int64_t fused = 0;   // queries whose TF32 pass ran as one kernel with its selection (tf32_select.h)
  int64_t half_rows = 0;  // of the sgemm ones, certified by the GEMV pass over 16-bit rows (half_rows.h)
  int64_t query_tiles = 0;  // query tiles of the first pass whose host queries arrived tile by tile
};

// Zeros for the other modes and for calls that returned early (nq = 0, n = 0, errors before the search).
KnnPassCounts last_knn_pass_counts();

// The GEMV pass of small batches (gemv_select.h) is on by default; tests and benchmarks switch it off
// to compare with the SGEMM tiles it replaces. Process-wide; set it between searches, not during one.
void set_gemv_select_enabled(bool on);
// Likewise the 16-bit rows an index keeps for it (half_rows.h), to compare with its float rows.
void set_half_rows_enabled(bool on);

// The batch sizes from which the fp32 mode takes the TF32 pass (the SGEMM pass below) and runs it as
// one kernel (cuBLAS tiles below). Tests and benchmarks move them to run or time each pass at any
// batch size. Process-wide; set them between searches, not during one.
struct BatchPassThresholds {
  int64_t min_tf32_queries;
  int64_t min_fused_queries;
};
BatchPassThresholds default_batch_pass_thresholds();
void set_batch_pass_thresholds(BatchPassThresholds thresholds);

// The most bytes of host results one query tile of the fused TF32 pass holds (knn.cu's
// kFusedResultTileBytes; 0: that default), for tests to split small searches into such tiles.
// Process-wide; set it between searches, not during one.
void set_fused_result_tile_bytes(int64_t bytes);

// The certified pass in half tiles (KnnPassCounts::fp16) is on by default; benchmarks switch it off
// to compare with the TF32 tiles it replaces. Process-wide, between searches.
void set_fp16_certified_enabled(bool on);

}  // namespace quiver::gpu
