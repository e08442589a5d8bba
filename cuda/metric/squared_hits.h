// The squared L2 distance of each range-search hit as the host computes it (cpp/distance/vectors.h's
// squared_l2: eight running sums, lane l taking components l, l + 8, ... below the last multiple of
// eight; the components from there summed in order; then the eight lanes added to that, lane 0
// first; every step rounded on its own, no fused multiply-add). A metric index answers L2 range
// searches in squared distances (the caller's units); computed here, the device's answer carries
// the floats the index's CPU path computes, without the host reading a row for every hit.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu::metric_space {

// out[i] for the hits i = offsets[s] .. offsets[s + 1] - 1 of segment s = 0 .. segments-1: query
// first_query + s (its vector at queries + (first_query + s) * dim) against row rows[i] of vectors
// (dim floats a row). Device memory, ordered on `stream`.
void squared_l2_of_hits(const float* queries, int64_t first_query, const float* vectors, int64_t dim,
                        const int32_t* rows, const int64_t* offsets, int64_t segments, float* out,
                        cudaStream_t stream);

}  // namespace quiver::gpu::metric_space
