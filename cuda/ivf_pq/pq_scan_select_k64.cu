// The selecting IVF-PQ scan for k <= 64 (its own file: nvcc builds the buckets in parallel).
#include "cuda/ivf_pq/pq_scan_kernel.cuh"
#include "cuda/select/select_buckets.h"

namespace quiver::gpu::pq_detail {

void launch_select_bucket1(const PqScanParams& p, cudaStream_t stream) {
  constexpr detail::SelectBucket b = detail::kSelectBuckets[1];
  static_assert(b.k == 64, "bucket 1 serves k <= 64");
  launch_for_layout<SelectSink<b.kr, b.t>>(p, stream);
}

}  // namespace quiver::gpu::pq_detail
