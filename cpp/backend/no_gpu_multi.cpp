// Merging on the GPU in a build without CUDA (cpp/backend/gpu_multi.h).
#ifndef QUIVER_HAVE_CUDA

#include "cpp/backend/gpu_multi.h"
#include "cpp/core/error.h"

namespace quiver::gpu {

namespace {

[[noreturn]] void no_cuda() { throw Error(Status::unsupported, "GPU result merging: " + unavailable_reason()); }

}  // namespace

ResultBuffer* result_buffer_create(Resources&, int64_t) { no_cuda(); }

void result_buffer_free(ResultBuffer*) noexcept {}

int64_t result_buffer_entries(const ResultBuffer&) { no_cuda(); }

float* result_distances(ResultBuffer&) { no_cuda(); }

int64_t* result_ids(ResultBuffer&) { no_cuda(); }

void merge_knn(Resources&, Metric, int64_t, int64_t, int64_t, const std::vector<const ResultBuffer*>&, float*,
               int64_t*) {
  no_cuda();
}

}  // namespace quiver::gpu

#endif
