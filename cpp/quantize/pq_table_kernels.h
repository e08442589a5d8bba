// The per-sub-space loops of the single-query look-up tables (pq_tables.cpp): one sub-codebook (256
// codewords of dsub floats, row-major) against one sub-vector. The same source
// (pq_table_kernels.inc) compiled once per instruction set and chosen at run time: the compiler
// vectorises the fixed-dsub loops about twice as fast with AVX-512 as with SSE2.
#pragma once

#include <cstdint>

namespace quiver {

struct PqTableKernels {
  // out[j] = <codeword j, x> for the 256 codewords
  void (*inner_products)(const float* codebook, int64_t dsub, const float* x, float* out);
  // out[j] = ||x - codeword j||^2 for the 256 codewords
  void (*distances)(const float* codebook, int64_t dsub, const float* x, float* out);
  // out[i] = base[i] + alpha * add[i] for i < size; alpha must be a power of two (an exact product),
  // so a fused multiply-add rounds as the separate operations do.
  void (*combine)(int64_t size, const float* base, float alpha, const float* add, float* out);
};

PqTableKernels pq_table_kernels_portable();
PqTableKernels pq_table_kernels_avx2();
PqTableKernels pq_table_kernels_avx512();

// The best set this processor runs (core/simd_level.h).
PqTableKernels best_pq_table_kernels();

}  // namespace quiver
