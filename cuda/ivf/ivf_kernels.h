// Small kernels of the inverted lists and their search: moving slots, probe bookkeeping, filters,
// and the final translation of (key, slot) pairs into distances and ids. Each launcher checks its
// launch; every pointer is device memory.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

// out row i = in row src[i] (rows of `words` 32-bit words; src[i] < 0: row i left alone).
void launch_gather_words(const uint32_t* in, int64_t words, const int32_t* src, int64_t n, uint32_t* out,
                         cudaStream_t stream);
// out row dest[i] = in row i (rows of `words` 32-bit words).
void launch_scatter_words(const uint32_t* in, int64_t words, const int32_t* dest, int64_t n, uint32_t* out,
                          cudaStream_t stream);

// out (n x dim) = x R^T: each row rotated by the dim x dim row-major R.
void rotate_rows(cublasHandle_t handle, const float* rotation, int64_t dim, const float* x, int64_t n, float* out);

// nprobe = nlist: every list is probed, in list order; keys[q][l] = tile[q][l] (+ norms[l]).
void launch_probe_all(const float* tile, int64_t ld, int64_t n, int64_t nlist, const float* norms, float* keys,
                      int32_t* lists, cudaStream_t stream);

// Allowed slots as a bitset (bit s % 32 of word s / 32) over `slots` slots: the slot's id is
// allowed by the id bitset (bit id % 8 of byte id / 8, ids below nbits).
void launch_slot_filter(const int64_t* slot_ids, int64_t slots, const uint8_t* id_bits, int64_t nbits,
                        uint32_t* slot_bits, cudaStream_t stream);

// rows x k selection results (keys smaller-is-closer, slots with the sentinel for none) into
// distances and ids (row stride k): L2 adds query_norms[row] when given and clamps at 0; similarities
// change sign; ids are slot_ids[slot], or the slot itself when slot_ids is null; none becomes -1 with
// +inf (L2) or -inf.
void launch_finalize_slots(const float* keys, const int32_t* slots, int64_t rows, int64_t k, const float* query_norms,
                           bool l2, const int64_t* slot_ids, float* distances, int64_t* ids, cudaStream_t stream);

}  // namespace quiver::gpu
