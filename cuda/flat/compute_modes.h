// The fast compute modes of the exact search (gpu.h's ComputeMode): half-precision copies of the
// inputs, the distance GEMM in each mode, and the exact float32 re-ranking of the candidates.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cpp/backend/gpu.h"

namespace quiver::gpu {

// Half-precision rows are padded with zeros to a multiple of this many values (16 bytes), so every
// row starts aligned for the tensor cores; the zeros add nothing to a dot product.
constexpr int64_t kHalfRowAlign = 8;

inline int64_t half_row_stride(int64_t dim) { return (dim + kHalfRowAlign - 1) / kHalfRowAlign * kHalfRowAlign; }

// out (n x ld values of 2 bytes, ld = half_row_stride(dim)) = x (n x dim floats) rounded to fp16 or
// bf16 (mode), zero-padded. For fp16, *overflow (device int) is set to 1 when a finite value rounds
// to infinity; it is left alone otherwise.
void launch_to_half(const float* x, int64_t n, int64_t dim, ComputeMode mode, void* out, int* overflow,
                    cudaStream_t stream);
// The same, and (max_abs_bits not null) atomicMax of the float bits of the largest |rounded value|
// into *max_abs_bits (a device unsigned, zeroed by the caller): what bounds an fp16 tile's range.
void launch_to_half(const float* x, int64_t n, int64_t dim, ComputeMode mode, void* out, int* overflow,
                    unsigned* max_abs_bits, cudaStream_t stream);

// tile (cols x rows, column-major with leading dimension ld: row-major rows x ld) = alpha * y x^T,
// with y cols x depth and x rows x depth, row-major with row strides ldy and ldx, in the given mode:
// fp32 / tf32 read floats, fp16 / bf16 the half copies above. Float32 accumulation and output.
void distance_gemm(cublasHandle_t handle, ComputeMode mode, int64_t cols, int64_t rows, int64_t depth, float alpha,
                   const void* y, int64_t ldy, const void* x, int64_t ldx, float* tile, int64_t ld);

// The fp16 / bf16 GEMM with the tile in the inputs' own 16-bit type (float32 accumulation): half
// the bytes of a float tile to write and to read back. tile: cols x rows, leading dimension ld.
void distance_gemm16(cublasHandle_t handle, ComputeMode mode, int64_t cols, int64_t rows, int64_t depth, float alpha,
                     const void* y, int64_t ldy, const void* x, int64_t ldx, void* tile, int64_t ld);

// The power of two s for an fp16 tile of alpha * s * <x, y>, with dim-long rows whose values are at
// most max_x and max_y in magnitude: |alpha s <x, y>| <= 32768 (half's largest is 65504).
float fp16_tile_scale(float alpha, int64_t dim, float max_x, float max_y);

// For nq queries with candidates rows[q * kc + j] (int32 rows, the selection's sentinel for none):
// keys[q * kc + j] = the exact float32 distance, sum (x - y)^2 for L2 or -<x, y> for similarities
// (smaller is closer), summed in the one order exact_distances.h defines, +inf for none.
// base: n x dim floats, queries nq x dim, all device memory. (Defined in exact_distances.cu.)
void launch_rerank(const float* base, const float* queries, int64_t dim, const int32_t* rows, int64_t nq,
                   int64_t kc, bool l2, float* keys, cudaStream_t stream);

}  // namespace quiver::gpu
