// Small kernels of the exact search and of the device matrix. Each launcher checks its launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

// out[i] = ||x_i||^2 for n rows of dim floats.
void launch_row_norms(const float* x, int64_t n, int64_t dim, float* out, cudaStream_t stream);

// Turns rows x k selection results (keys in the GEMM's order: ||y||^2 - 2<x,y> for L2, -<x,y> for
// similarities; ids as 32-bit rows with the sentinel for "none") into distances and 64-bit ids:
// L2 adds the query norm and clamps at 0, similarities change sign, the sentinel becomes -1 with
// +inf / -inf. Output rows have stride k. query_norms == nullptr with l2: the keys are already
// whole distances (the fast modes' re-rank).
void launch_finalize(const float* keys, const int32_t* rows_in, int64_t rows, int64_t k,
                     const float* query_norms, bool l2, float* distances, int64_t* ids,
                     cudaStream_t stream);

// distances[i] = value, ids[i] = -1 for count entries.
void launch_fill_missing(float* distances, int64_t* ids, int64_t count, float value, cudaStream_t stream);
// The same for the results of a search with nothing to find: on the device (launch_fill_missing on
// `stream`) when both outputs are device memory, else in host memory.
void fill_missing_results(float* distances, int64_t* ids, int64_t count, float value, bool outputs_on_device,
                          cudaStream_t stream);

// out row i = x row rows[i], for n rows of dim floats (device arrays).
void launch_gather_rows(const float* x, int64_t dim, const int64_t* rows, int64_t n, float* out,
                        cudaStream_t stream);

// For each of count pairs (src, dst) = (pairs[2i], pairs[2i + 1]): row dst of distances / ids (k
// entries each) = row src of src_distances / src_ids. Device arrays.
void launch_scatter_results(const float* src_distances, const int64_t* src_ids, const int64_t* pairs, int64_t count,
                            int64_t k, float* distances, int64_t* ids, cudaStream_t stream);

}  // namespace quiver::gpu
