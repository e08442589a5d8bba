// The TF32 pass of the exact search in one kernel: tensor-core products (TF32 inputs, float
// accumulation) whose keys are selected where they are computed. The distance tile that a
// cuBLAS GEMM writes and the selection reads back (8 bytes per query and base row, ~80 GB for
// 10 000 queries against 1M rows) never leaves the SM.
//
// A block holds a tile of 128 queries and streams its split of the base through it, tile by tile
// (the base is cut into splits so that the grid fills the device). Two kernels:
//   - compute capability 9.0 (tf32_select_sm90a.h): the queries in registers, base tiles copied by
//     the tensor memory accelerator three deep, warpgroup products (wgmma) from shared memory; each
//     warp selects for its own 16 queries;
//   - otherwise: the queries in shared memory, base tiles copied by cp.async, mma.sync products
//     from registers; the block selects together.
// Each query keeps its best keys so far, sorted, and a limit (the kc-th best); a key below the
// limit joins the query's pending list, and a full pending list is merged into the best by one warp
// (tf32_lists.cuh). The result per query and split is its kc best, sorted; a selection over the
// splits gives the pass's candidates. The keys are those of the cuBLAS TF32 GEMM up to summation order:
// ||y||^2 - 2 <x, y> (L2, with the base norms given) or -<x, y>, inputs truncated to TF32 by the
// tensor cores (certify.h's model covers both).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/select/select.h"

namespace quiver::gpu {

// The largest dimension whose query tile stays in shared memory, and the most candidates a query.
constexpr int64_t kTf32SelectMaxDim = 128;
constexpr int64_t kTf32SelectMaxK = 32;

// Whether the fused pass takes this search: dim a multiple of 4 (16-byte rows) up to
// kTf32SelectMaxDim, 1 <= kc <= kTf32SelectMaxK, n below 2^31 rows, and tensor cores with TF32
// (compute capability 8.0 or later) on the device `limits` describe, with the shared memory its
// kernel takes.
bool tf32_select_fits(const SelectLimits& limits, int64_t dim, int64_t kc, int64_t n);

// How many splits of the base a search of nq queries against n rows takes: enough blocks for whole
// waves of the device (limits.sm_count), each split at least a few tiles, and at least min_splits
// where the base has that many splits of a few tiles.
int64_t tf32_select_splits(const SelectLimits& limits, int64_t nq, int64_t n, int64_t min_splits = 1);

// The kernel that runs the pass: on a device of compute capability 9.0, warpgroup products (wgmma,
// tf32_select_sm90a.h) by default; elsewhere, or when asked, mma.sync products.
enum class Tf32SelectKernel { automatic, mma_sync };

// For queries (nq x dim) against base rows (n x dim, row-major, both 16-byte aligned; numbered from
// row_offset: a part of a larger base) and, for L2, base_norms (n floats): keys / rows
// (nq x splits * kc) = for query q and split s, at
// [q][s * kc .. s * kc + kc), the kc best keys of the split's rows, ascending (ties to the smaller
// row), and their rows; +inf and the largest int32 where the split has fewer allowed rows. filter
// (optional): row r is allowed when r < filter_bits and bit r % 8 of filter[r / 8] is set. Rows whose
// key is +inf or NaN are never selected. bounds (optional): query q keeps no key above
// bounds[q * bounds_ld] (the running kc-th best of rows searched before these: no key above can join
// it), and a split with fewer such rows ends its list in that bound with the largest int32 as the row.
// All pointers device memory of the device `limits` describe; tf32_select_fits must hold.
void launch_tf32_select(const SelectLimits& limits, const float* queries, int64_t nq, const float* base,
                        const float* base_norms, int64_t n, int64_t dim, int64_t kc, bool l2, const uint8_t* filter,
                        int64_t filter_bits, int64_t splits, float* keys, int32_t* rows, cudaStream_t stream,
                        Tf32SelectKernel kernel = Tf32SelectKernel::automatic, int64_t row_offset = 0,
                        const float* bounds = nullptr, int64_t bounds_ld = 0);

}  // namespace quiver::gpu
