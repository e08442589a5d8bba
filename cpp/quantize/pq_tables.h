// Look-up tables for IVF-PQ (IVFADC) scans, after section 5.2 of Johnson, Douze, Jégou, "Billion-scale
// similarity search with GPUs". An entry of list c is stored as the PQ code r of its residual y - c;
// for a query x, with x_s, c_s the sub-vectors of sub-space s and q_sj the codewords:
//   L2:             ||x - c - q(r)||^2 = ||x - c||^2 + sum_s T1[c][s][r_s] - 2 sum_s <x_s, q_{s r_s}>
//                   with T1[c][s][j] = ||q_sj||^2 + 2 <c_s, q_sj>  (term 1: independent of the query)
//   inner product:  <x, c + q(r)> = <x, c> + sum_s <x_s, q_{s r_s}>
// A table is m x 256 floats: table[s * 256 + j].
#pragma once

#include <cstdint>

#include "cpp/quantize/product_quantizer.h"

namespace quiver {

// table[s * 256 + j] = ||q_sj||^2 + 2 <centroid_s, q_sj>: term 1 of one list (centroid: dim floats).
void pq_list_table(const ProductQuantizer& pq, const float* centroid, float* table);

// All lists' term-1 tables: tables (nlist x m x 256) for centroids (nlist x dim). Parallel over the pool.
void pq_list_tables(const ProductQuantizer& pq, ThreadPool& pool, int64_t nlist, const float* centroids,
                    float* tables);

// table[s * 256 + j] = <x_s, q_sj>: the inner products of one query (dim floats) with every codeword.
void pq_query_inner_products(const ProductQuantizer& pq, const float* x, float* table);

// The same for nq queries at once (tables: nq x m x 256), parallel over the pool; through the GEMM
// kernels when dsub >= 8, about twice as fast per query as pq_query_inner_products there.
void pq_queries_inner_products(const ProductQuantizer& pq, ThreadPool& pool, int64_t nq, const float* x,
                               float* tables);

// table[s * 256 + j] = ||residual_s - q_sj||^2: the direct L2 table of residual = x - centroid (when
// term-1 tables are not precomputed).
void pq_query_l2_table(const ProductQuantizer& pq, const float* residual, float* table);

// out[i] = base[i] + alpha * add[i] for i < size (base may be nullptr: out = alpha * add). Combines
// tables, e.g. the L2 scan table of list c is pq_combine_tables(m * 256, T1[c], -2, inner_products).
// out may alias base or add.
void pq_combine_tables(int64_t size, const float* base, float alpha, const float* add, float* out);

}  // namespace quiver
