// squared_hits.h: a warp per segment (query), a team of kHostLanes lanes per hit, lane l of the team
// keeping the host's running sum l.
#include "cuda/metric/squared_hits.h"

#include "cuda/core/error.h"
#include "cuda/metric/vector_distance.cuh"

namespace quiver::gpu::metric_space {

namespace {

// The host's running sums (cpp/distance/vectors.cpp's kLanes, one AVX2 register of floats).
constexpr int kHostLanes = 8;
constexpr int kTeams = kWarpLanes / kHostLanes;
constexpr int kThreads = 256;
constexpr int kSegmentsPerBlock = kThreads / kWarpLanes;

__global__ void __launch_bounds__(kThreads)
    squared_l2_kernel(const float* queries, int64_t first_query, const float* vectors, int64_t dim,
                      const int32_t* rows, const int64_t* offsets, int64_t segments, float* out) {
  const int lane = int(threadIdx.x) % kWarpLanes, team = lane / kHostLanes, member = lane % kHostLanes;
  const int64_t s = int64_t(blockIdx.x) * kSegmentsPerBlock + threadIdx.x / kWarpLanes;
  if (s >= segments) return;  // the whole warp
  const float* x = queries + (first_query + s) * dim;
  const int64_t lanes_end = dim - dim % kHostLanes;
  for (int64_t first = offsets[s]; first < offsets[s + 1]; first += kTeams) {  // the same trip count in a warp
    const int64_t i = first + team;
    const bool valid = i < offsets[s + 1];
    const float* y = vectors + (valid ? rows[i] : 0) * dim;
    // Running sum `member`: components member, member + 8, ... below lanes_end.
    float partial = 0.0f;
    for (int64_t c = member; valid && c < lanes_end; c += kHostLanes) {
      const float d = __fsub_rn(x[c], __ldg(y + c));
      partial = __fadd_rn(partial, __fmul_rn(d, d));
    }
    // The rest in order, then the running sums, lane 0 first.
    float sum = 0.0f;
    for (int64_t c = lanes_end; valid && member == 0 && c < dim; ++c) {
      const float d = __fsub_rn(x[c], __ldg(y + c));
      sum = __fadd_rn(sum, __fmul_rn(d, d));
    }
    for (int l = 0; l < kHostLanes; ++l) sum = __fadd_rn(sum, __shfl_sync(kAllLanes, partial, team * kHostLanes + l));
    if (valid && member == 0) out[i] = sum;
  }
}

}  // namespace

void squared_l2_of_hits(const float* queries, int64_t first_query, const float* vectors, int64_t dim,
                        const int32_t* rows, const int64_t* offsets, int64_t segments, float* out,
                        cudaStream_t stream) {
  if (segments == 0) return;
  const int64_t blocks = (segments + kSegmentsPerBlock - 1) / kSegmentsPerBlock;
  squared_l2_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(queries, first_query, vectors, dim, rows, offsets,
                                                                segments, out);
  QV_LAUNCH_CHECK("metric squared_l2_kernel");
}

}  // namespace quiver::gpu::metric_space
