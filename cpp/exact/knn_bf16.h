// Exact k-NN with a bfloat16 GEMM (twice the multiply-adds per cycle of fp32 where the processor has
// AVX-512 BF16) and a certificate: every bfloat16 key comes with a bound on its error, derived from
// per-row rounding residuals (cpp/blas/bf16.h), so the search keeps every row whose lower bound is
// within the k-th smallest upper bound and re-ranks those exactly. The result is the same as the
// fp32 engine's (exact/knn.h), or closer to exact where the fp32 GEMM form itself loses precision;
// only the work differs. A query whose bounds are too loose to prune (huge offsets, tiny distances)
// is answered from exact distances to every row: slower, never wrong.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/blas/bf16.h"
#include "cpp/exact/database.h"

namespace quiver {

class ThreadPool;

// A database's rows in bfloat16 with what the certificate needs.
struct Bf16Database {
  Bf16Matrix matrix;
  std::vector<float> residual;  // || y - bf16(y) || per row
  std::vector<float> norm;      // || y || per row
};

Bf16Database make_bf16_database(const Database& db);

// Whether the bfloat16 path pays off for this search: the processor has it, and there are enough
// queries and rows to amortise packing. QUIVER_EXACT_GEMM=fp32 in the environment turns it off.
bool bf16_search_pays_off(int64_t nq, int64_t n, int64_t dim);

// As exact_knn (exact/knn.h), through bdb = make_bf16_database(db).
void exact_knn_bf16(ThreadPool& pool, const Database& db, const Bf16Database& bdb,
                    const Queries& queries, int64_t k, const IdFilter& filter, float* distances,
                    int64_t* ids);

}  // namespace quiver
