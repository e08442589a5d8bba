// bfloat16 operands for the exact-search GEMM: C = alpha * A * B^T with A and B rounded to bfloat16
// and products accumulated in fp32 (vdpbf16ps, which does twice the multiply-adds per cycle of an
// fp32 FMA). The caller bounds the rounding error with the per-row residuals that packing reports:
// |<a, b> - <bf16(a), bf16(b)>| <= ||a|| * res(b) + res(a) * ||b|| + res(a) * res(b).
#pragma once

#include <cstdint>
#include <memory>

namespace quiver {

// Rounds x to the nearest bfloat16, ties to even; returns its bits (the upper half of a float's).
// |x| at or above 3.3962e38 (half-way past the largest bfloat16, 3.3895e38) becomes +-inf; results
// below the smallest normal bfloat16 (1.1755e-38) become +-0, because vdpbf16ps reads subnormal
// inputs as zero; NaN stays a (quiet) NaN.
uint16_t float_to_bf16(float x);
// Exact.
float bf16_to_float(uint16_t h);

// True when this processor runs gemm_abt_bf16 (AVX-512 F, BW, DQ, VL and BF16); elsewhere callers use
// the fp32 gemm_abt. pack_bf16 runs on every processor.
bool bf16_gemm_available();

// Frees what pack_bf16 allocated (64-byte aligned storage).
struct Bf16Free {
  void operator()(uint32_t* p) const noexcept;
};

// A rows x cols matrix rounded to bfloat16, packed for gemm_abt_bf16; either operand (queries or
// database) uses this one layout. Move-only; owns its storage.
//
// Layout, for the kernel (callers need not know it): rows in panels of kBf16PanelRows; a panel holds
// `pairs` groups of kBf16PanelRows 32-bit words, word (row r, pair p) = bf16(x[r][2p]) in the low half
// and bf16(x[r][2p+1]) in the high half. The odd column past cols and the rows past `rows` up to the
// next panel are zeros.
constexpr int64_t kBf16PanelRows = 16;  // fp32 lanes of an AVX-512 register
struct Bf16Matrix {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t pairs = 0;  // (cols + 1) / 2
  std::unique_ptr<uint32_t[], Bf16Free> data;
};

// Rounds the n x k row-major floats x to bfloat16 (float_to_bf16) and packs them.
//
// residual  null, or n floats: residual[i] = || x_i - bf16(x_i) ||_2, accumulated in double and
//           rounded up to float so it stays an upper bound.
// Throws Error (invalid_argument) on n < 0 or k < 0, or when the packed size overflows int64;
// std::bad_alloc when the storage cannot be allocated.
Bf16Matrix pack_bf16(const float* x, int64_t n, int64_t k, float* residual);

// C (m x n floats, row stride ldc) = alpha * A' * B'^T, where A' is rows [a_row_begin, a_row_begin + m)
// of a and B' rows [b_row_begin, b_row_begin + n) of b: C[i][j] = alpha * <a_{a_row_begin+i},
// b_{b_row_begin+j}>. Overwrites the m x n tile (no beta) and touches nothing else of C.
//
// Accuracy: the products of bf16 values are exact and summed in fp32 (round to nearest; sums and
// products below 2^-126 are flushed to zero), so
//   |C[i][j] - alpha * sum_t a_t b_t| <= (cols + 4) * 2^-24 * |alpha| * sum_t |a_t b_t|
// (a and b the bf16 values), plus 2^-126 * |alpha| per term. This holds for any cols: a term goes
// through at most min(cols, 1024) + cols / 1024 + 1 roundings (sums over blocks of at most 1024
// columns, then added into C). No NaN comes from finite packed values unless a product or a sum
// overflows fp32, as with fp32 GEMM.
//
// Single-threaded and reentrant: callers parallelise over tiles. Each calling thread keeps a scratch
// of at most 512 KB between calls (the re-packed block of A).
//
// Throws Error: unsupported when bf16_gemm_available() is false; invalid_argument when
// a.cols != b.cols, a row range lies outside its matrix, m or n < 0, or ldc < n; out_of_host_memory
// when the scratch cannot be allocated. Nothing is written then.
void gemm_abt_bf16(int64_t m, int64_t n, float alpha, const Bf16Matrix& a, int64_t a_row_begin,
                   const Bf16Matrix& b, int64_t b_row_begin, float* c, int64_t ldc);

}  // namespace quiver
