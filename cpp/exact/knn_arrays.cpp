#include "cpp/exact/knn_arrays.h"

#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/core/input.h"
#include "cpp/distance/vectors.h"
#include "cpp/exact/knn.h"
#include "cpp/exact/knn_bf16.h"
#include "cpp/index/index.h"

namespace quiver {

void knn_arrays(Context& context, Metric metric, int64_t dim, int64_t n, const float* base,
                int64_t nq, const float* queries, int64_t k, const IdFilter& filter,
                ComputeMode mode, float* distances, int64_t* ids) {
  require(is_valid_metric(static_cast<int32_t>(metric)), "metric: ", static_cast<int32_t>(metric),
          " is not QV_METRIC_L2, QV_METRIC_INNER_PRODUCT or QV_METRIC_COSINE");
  require(dim >= 1 && dim <= kMaxDim, "dim = ", dim, " is outside 1 .. ", kMaxDim);
  require(n >= 0, "n = ", n, " is negative");
  require(nq >= 0, "nq = ", nq, " is negative");
  require(k >= 1 && k <= kMaxK, "k = ", k, " is outside 1 .. ", kMaxK);
  require(filter.nbits >= 0, "params->filter_bits = ", filter.nbits, " is negative");
  const bool gpu = context.device() == DeviceKind::cuda;
  const Input base_in = prepare_input(context, "base", base, n, dim, metric, gpu);
  const Input queries_in = prepare_input(context, "queries", queries, nq, dim, metric, gpu);
  if (gpu) {
    gpu::knn(context.gpu(), metric, base_in.data, nullptr, n, dim, queries_in.data, nq, k, distances, ids,
             gpu::RowFilter{filter.bits, filter.nbits}, mode);
    return;
  }
  Database db;
  db.x = base_in.data;
  db.n = n;
  db.dim = dim;
  db.metric = metric;
  std::vector<float> norms;
  if (metric == Metric::l2) {
    norms = squared_norms(db.x, n, dim);
    db.norms = norms.data();
  }
  const Queries q{queries_in.data, nq};
  if (bf16_search_pays_off(nq, n, dim)) {
    exact_knn_bf16(context.pool(), db, make_bf16_database(db), q, k, filter, distances, ids);
  } else {
    exact_knn(context.pool(), db, q, k, filter, distances, ids);
  }
}

}  // namespace quiver
