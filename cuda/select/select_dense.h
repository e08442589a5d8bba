// Row-wise selection where k is a large share of a short row: the fused exact search's candidates
// (1280 of the splits' 5120 and the 1280 before them at k = 1024), and their re-ranked k best. The
// warp queues (select_kernel.cuh) merge a queue of k registers a lane over and over there. One block
// a row instead holds the row's keys in shared memory, finds its k-th pair by radix selection on the
// key's bits (then on the id's, where equal keys straddle it), and sorts only the k pairs at or
// below it. Same result as the warp queues: ties to the smaller id, NaN keys and filtered ids left
// out, padding as select.h describes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/select/select_launch.h"

namespace quiver::gpu::detail {

// From this k on (select.cu's kLargeQueue: the queues that merge through long networks).
constexpr int64_t kDenseMinK = 512;
// A row's columns and the previous result's k pairs, held in shared memory (6 bytes a pair).
constexpr int64_t kDenseMaxPairs = 8192;

// Whether a row of `cols` keys (and a previous result of k, if any) takes the dense selection.
inline bool dense_select_fits(int64_t cols, int64_t k) { return k >= kDenseMinK && cols + k <= kDenseMaxPairs; }

// Enqueues the selection of p.k of each of `rows` rows on `stream`: float keys (p.keys16 unused),
// one chunk a row (p.tasks, p.chunks, p.warps_per_row and the pre-filter's fields unused).
template <typename V>
void launch_dense_select(const SelectParams<V>& p, int64_t rows, cudaStream_t stream);

}  // namespace quiver::gpu::detail
