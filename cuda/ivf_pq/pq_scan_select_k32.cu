// The selecting IVF-PQ scan for k <= 32 (its own file: nvcc builds the buckets in parallel).
#include "cuda/ivf_pq/pq_scan_kernel.cuh"
#include "cuda/select/select_buckets.h"

namespace quiver::gpu::pq_detail {

void launch_select_bucket0(const PqScanParams& p, cudaStream_t stream) {
  constexpr detail::SelectBucket b = detail::kSelectBuckets[0];
  static_assert(b.k == 32, "bucket 0 serves k <= 32");
  launch_for_layout<SelectSink<b.kr, b.t>>(p, stream);
}

}  // namespace quiver::gpu::pq_detail
