// Operations without an index: exact k-NN and k-means.
#include <vector>

#include "capi/guard.h"
#include "capi/handles.h"
#include "capi/search_options.h"
#include "cpp/backend/gpu.h"
#include "cpp/cluster/kmeans.h"
#include "cpp/core/input.h"
#include "cpp/exact/knn_arrays.h"
#include "cpp/index/index.h"

using quiver::capi::guarded;
using quiver::capi::require_pointer;
using quiver::require;

namespace {

qv_kmeans_params_t default_kmeans_params() {
  qv_kmeans_params_t p{};
  p.struct_size = sizeof p;
  p.iterations = 20;
  p.seed = 1234;
  p.max_points_per_centroid = 256;
  return p;
}

constexpr size_t kKmeansVersions[] = {
    QV_FIELD_END(qv_kmeans_params_t, iterations), QV_FIELD_END(qv_kmeans_params_t, seed),
    QV_FIELD_END(qv_kmeans_params_t, max_points_per_centroid), QV_FIELD_END(qv_kmeans_params_t, progress),
    QV_FIELD_END(qv_kmeans_params_t, user_data)};

// What the unsized qv_kmeans_params_init writes, forever.
constexpr size_t kKmeansUnsizedInitSize = QV_FIELD_END(qv_kmeans_params_t, max_points_per_centroid);

void require_dim(int64_t dim) {
  require(dim >= 1 && dim <= quiver::kMaxDim, "dim = ", dim, " is outside 1 .. ", quiver::kMaxDim);
}

}  // namespace

extern "C" {

qv_status_t qv_knn(qv_context_t* context, qv_metric_t metric, int64_t dim, int64_t n,
                   const float* base, int64_t nq, const float* queries, uint32_t k,
                   const qv_search_params_t* params, float* distances, int64_t* ids) {
  return guarded([&] {
    require_pointer(context, "context");
    if (n > 0) require_pointer(base, "base");
    if (nq > 0) {
      require_pointer(queries, "queries");
      require_pointer(distances, "distances");
      require_pointer(ids, "ids");
    }
    const quiver::SearchOptions options = quiver::capi::search_options(params);
    quiver::knn_arrays(*context->context, static_cast<quiver::Metric>(metric), dim, n, base, nq, queries, k,
                       options.filter, options.compute_mode, distances, ids);
  });
}

qv_status_t qv_kmeans_params_init_sized(qv_kmeans_params_t* params, size_t size) {
  return guarded([&] { quiver::capi::init_params(params, size, default_kmeans_params(), "params", kKmeansVersions); });
}

// Parenthesised: the header's macro of this name calls the sized function.
qv_status_t(qv_kmeans_params_init)(qv_kmeans_params_t* params) {
  return guarded([&] {
    quiver::capi::init_params(params, kKmeansUnsizedInitSize, default_kmeans_params(), "params", kKmeansVersions);
  });
}

qv_status_t qv_kmeans(qv_context_t* context, int64_t dim, int64_t n, const float* x, uint32_t k,
                      const qv_kmeans_params_t* params, float* centroids, int64_t* assignments,
                      double* objective) {
  return guarded([&] {
    require_pointer(context, "context");
    require_dim(dim);
    require(n >= 1, "n = ", n, " must be at least 1");
    require_pointer(x, "x");
    require_pointer(centroids, "centroids");
    require(k >= 1 && k <= n, "k = ", k, " must be in 1 .. n (", n, ")");
    const qv_kmeans_params_t p =
        quiver::capi::read_params(params, default_kmeans_params(), "params", kKmeansVersions);
    require(p.max_points_per_centroid >= 0, "params->max_points_per_centroid = ",
            p.max_points_per_centroid, " is negative");
    const quiver::Context& engine = *context->context;
    const quiver::Input input =
        quiver::prepare_input(engine, "x", x, n, dim, quiver::Metric::l2, engine.device() == quiver::DeviceKind::cuda);
    quiver::KmeansOptions options;
    options.iterations = p.iterations;
    options.seed = p.seed;
    options.max_points_per_centroid = p.max_points_per_centroid;
    options.progress = quiver::capi::progress_callback(p.progress, p.user_data);
    const quiver::KmeansResult result =
        engine.device() == quiver::DeviceKind::cuda
            ? quiver::gpu::kmeans(engine.gpu(), dim, n, input.data, k, options, centroids, assignments)
            : quiver::kmeans(engine.pool(), dim, n, input.data, k, options, centroids, assignments);
    if (objective) *objective = result.objective;
  });
}

}  // extern "C"
