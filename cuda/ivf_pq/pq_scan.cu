#include "cuda/ivf_pq/pq_scan.h"

#include "cpp/core/error.h"
#include "cuda/ivf_pq/pq_scan_kernel.cuh"
#include "cuda/select/select_buckets.h"

namespace quiver::gpu {

using namespace pq_detail;

int64_t pq_scan_shared_bytes(int64_t m, int64_t dsub, int64_t code_stride, bool half_tables) {
  int64_t table = 0;
  if (use_rotated(m, code_stride, half_tables)) {
    table = kRotTableBytes;
  } else {
    table = half_tables ? PlainTable<__half>::bytes(m) : PlainTable<float>::bytes(m);
  }
  // table_shared's layout: the table region, the query (dim floats), the offsets (m floats).
  return table_region_bytes(table) + align16(m * dsub * 4) + m * 4;
}

void launch_pq_scan(const PqScanParams& p, cudaStream_t stream) { launch_for_layout<RowSink>(p, stream); }

void launch_pq_scan_select(const PqScanParams& p, cudaStream_t stream) {
  require(p.k >= 1 && p.k <= kMaxPqScanSelectK, "k = ", p.k, " is outside 1 .. ", kMaxPqScanSelectK);
  static_assert(detail::kSelectBuckets[2].k == kMaxPqScanSelectK, "three buckets serve the selecting scan");
  switch (detail::select_bucket(p.k)) {
    case 0: return launch_select_bucket0(p, stream);
    case 1: return launch_select_bucket1(p, stream);
    default: return launch_select_bucket2(p, stream);
  }
}

}  // namespace quiver::gpu
