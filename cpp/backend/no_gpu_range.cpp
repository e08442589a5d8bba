// The GPU range search of a build without CUDA (cpp/backend/gpu_range.h).
#ifndef QUIVER_HAVE_CUDA

#include "cpp/backend/gpu_range.h"
#include "cpp/core/error.h"

namespace quiver::gpu {

RangeHits range_search(Resources&, Metric, const float*, const float*, int64_t, int64_t, const float*, int64_t,
                       float, const RowFilter&, int64_t) {
  throw Error(Status::unsupported, "GPU range search: " + unavailable_reason());
}

}  // namespace quiver::gpu

#endif
