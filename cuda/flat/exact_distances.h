// The exact float32 distance of the GPU exact search, and the two kernels that compute it: the
// re-rank of candidates (compute_modes.h's launch_rerank) and a direct distance tile for the
// searches that rank every row by it (the fp32 mode's fallback and its k > 1024 path).
//
// One definition, evaluated in one fixed order so that both kernels give the same bits for a pair:
//   L2:                acc = 0; for i = 0 .. dim-1: t = x[i] - y[i]; acc = fmaf(t, t, acc); key = acc
//   inner product:     acc = 0; for i = 0 .. dim-1: acc = fmaf(x[i], y[i], acc);         key = -acc
// (smaller key is closer). Its error against the real value is what certify.h assumes:
// |key - ||x - y||^2| <= (dim + 2) 2^-24 ||x - y||^2 for L2 (a sum of non-negative terms), and
// |acc - <x, y>| <= dim 2^-24 sum |x_i y_i| for inner products, plus underflow.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/flat/certify.h"

namespace quiver::gpu {

// The largest candidate set launch_finish_small takes: one lane a candidate.
constexpr int64_t kSmallFinishCandidates = 32;

// tile (rows x ld floats, row-major: row = query) = the keys above for queries x (rows x dim) against
// base rows y (cols x dim), both row-major with row stride dim, device memory.
void launch_direct_tile(const float* x, const float* y, int64_t rows, int64_t cols, int64_t dim, bool l2,
                        float* tile, int64_t ld, cudaStream_t stream);

// The end of a pass for kc <= kSmallFinishCandidates candidates a query, in one kernel (a warp a
// query), for the latency of small searches: the candidates' exact keys (launch_rerank's, bit for
// bit), their k best (ties to the smaller row), the certificate when model != nullptr (certify.h:
// flags, query_stats, base_stats as launch_certify takes them) and the outputs as launch_finalize
// writes them for whole distances. approx_keys / approx_rows: nq x kc, the pass's selection.
// distances / ids: nq x k, device memory.
void launch_finish_small(const float* base, const float* queries, int64_t dim, const float* approx_keys,
                         const int32_t* approx_rows, int64_t kc, int64_t k, int64_t nq, bool l2,
                         const CertifyModel* model, const double* query_stats, const unsigned* base_stats,
                         uint8_t* flags, float* distances, int64_t* ids, cudaStream_t stream);

}  // namespace quiver::gpu
