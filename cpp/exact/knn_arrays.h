// Exact k-NN over caller arrays, without an index (qv_knn): the ids are row numbers.
#pragma once

#include <cstdint>

#include "cpp/core/compute_mode.h"
#include "cpp/core/metric.h"
#include "cpp/select/topk.h"

namespace quiver {

class Context;

// Validates the inputs (finite, k in range, non-zero rows for cosine) and searches, on the context's
// device (inputs and outputs may be host or device memory there; mode picks the GPU's arithmetic).
void knn_arrays(Context& context, Metric metric, int64_t dim, int64_t n, const float* base,
                int64_t nq, const float* queries, int64_t k, const IdFilter& filter,
                ComputeMode mode, float* distances, int64_t* ids);

}  // namespace quiver
