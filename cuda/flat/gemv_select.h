// The SGEMM pass of a small batch (knn.cu: fp32 mode, fewer than kMinTf32Queries queries) in one
// read of the base. A batch of a few queries against a large base is a GEMV: the base's bytes are
// the whole cost (1M x 128 floats, 512 MB: about 120 us on an H200). cuBLAS's GEMV wrote a key per
// row, which a selection then read back; here the kernel that computes the keys keeps the best of
// them as it goes, and a second, small kernel merges what its blocks kept.
//
//   1. gemv_select_kernel: the grid's warps take steps of eight rows in turn (four lanes a row, float4
//      loads where rows allow), forms each row's key for each query, and offers it to the query's
//      register queue (WarpSelect); a row above the queue's limit costs one compare. A block's warps
//      merge their queues; each block writes its kc best per query, sorted.
//   2. gemv_merge_kernel: a block per query merges the blocks' lists into the kc best, sorted, ties
//      to the smaller row, missing entries as the selection's sentinel (+inf, largest int32): what
//      select_rows writes with keep_missing_as_sentinel, which the finish stage reads. It ranks the
//      few candidates under a tight bound by counting (no queues), and gathers the certificate's
//      statistics on the side.
//
// Over an index's 16-bit rows (half_rows.h) the kernel reads half the bytes; its keys are then those
// of the rounded rows, which the certificate bounds as rounded inputs.
//
// The keys are those of the SGEMM pass up to the summation order of the dot product: ||y||^2 - 2
// <x, y> (L2, with the given norms; one fmaf forms it, as the selection adds its bias) or -<x, y>.
// Each lane sums its share of the products with fmaf in order, two shuffle additions join the four
// lanes: every product passes through at most ceil(dim / 4) + 2 <= dim roundings (dim <= 2: the
// additions of zeros are exact), within certify.h's SGEMM model (any order of float FMAs, gamma_dim,
// taken 4x over), so the certificate's bound covers these keys too. Rows whose key is NaN are never
// selected; +inf keys are (as the selection does).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/select/select.h"

namespace quiver::gpu {

// The most queries of one launch: each base row, loaded once, serves them all from registers.
// Beyond, the queues' registers crowd out the loads in flight: 8 queries took 0.92 ms where the
// SGEMM tiles take 0.45 (host to host, 1M x 128, k = 10, H200); 4 took 0.30 against 0.39, 2 0.22
// against 0.35.
constexpr int64_t kGemvSelectMaxQueries = 4;
// The most candidates per query (two registers of warp queue per lane): k up to 48 in the fp32 mode.
constexpr int64_t kGemvSelectMaxK = 64;

// Whether the pass takes this shape: 1 <= nq <= kGemvSelectMaxQueries, 1 <= kc <= kGemvSelectMaxK,
// the queries' floats within the shared memory the kernel keeps for them.
bool gemv_select_fits(int64_t nq, int64_t dim, int64_t kc);

// Blocks of the first kernel for this search (as many as the current device holds at once on the
// `limits.sm_count` multiprocessors, fewer for a short base): the merge reads nq x blocks x kc
// candidates.
// half_rows: the launch reads 16-bit rows (half_base).
int64_t gemv_select_blocks(const SelectLimits& limits, int64_t nq, int64_t n, int64_t dim, int64_t kc,
                           bool half_rows = false);

// The certificate's statistics (certify.h) the pass gathers as it goes, so that a search that
// certifies has no statistics kernels to wait for; null pointers: not wanted. query_stats: nq x 2
// doubles, launch_query_stats's of the queries. base_stats (L2 keys on exact inputs: the base's
// norms given): kBaseStatsCount numbers, what zeroing them and launch_norms_max of the norms with
// norms_scale would make; block_norms_max: its workspace, `blocks` floats.
struct GemvStats {
  double* query_stats = nullptr;
  unsigned* base_stats = nullptr;
  float norms_scale = 1.f;
  float* block_norms_max = nullptr;
};

// Queries (nq x dim) against base rows (n x dim), both row-major, or against their 16-bit copy
// half_base (half_rows.h; the keys are then of the rounded rows, and base is not read), with (L2)
// base_norms (n floats, the ||y||^2 of the keys) or nullptr (inner product): out_keys / out_rows
// (nq x kc) = each query's kc best keys, ascending (ties to the smaller row), and their rows; +inf
// and the largest int32 past the allowed rows. filter (optional): row r is allowed when r <
// filter_bits and bit r % 8 of filter[r / 8] is set. block_keys / block_rows: nq x blocks x kc of
// workspace (blocks from gemv_select_blocks). rerank_base (optional): the rows the finish stage reads
// for the candidates' exact keys (the uncentred base), whose candidate rows are prefetched into L2.
// All pointers device memory; gemv_select_fits must hold. stats: see GemvStats. Enqueued on `stream`.
void launch_gemv_select(const float* queries, int64_t nq, const float* base, const __half* half_base,
                        const float* base_norms, int64_t n, int64_t dim, int64_t kc, const uint8_t* filter,
                        int64_t filter_bits, int64_t blocks, float* block_keys, int32_t* block_rows, float* out_keys,
                        int32_t* out_rows, const float* rerank_base, const GemvStats& stats, cudaStream_t stream);

}  // namespace quiver::gpu
