// k-nearest-neighbour graphs of caller arrays (qv_knn_graph).
#include <algorithm>

#include "capi/guard.h"
#include "capi/handles.h"
#include "cpp/graph/knn_graph.h"
#include "cpp/index/index.h"

using quiver::capi::guarded;
using quiver::capi::require_pointer;
using quiver::require;

namespace {

static_assert(QV_KNN_GRAPH_AUTO == static_cast<int>(quiver::KnnGraphMethod::automatic) &&
                  QV_KNN_GRAPH_EXACT == static_cast<int>(quiver::KnnGraphMethod::exact) &&
                  QV_KNN_GRAPH_APPROXIMATE == static_cast<int>(quiver::KnnGraphMethod::approximate),
              "the C method codes are the engine's");
static_assert(QV_ERR_CANCELLED == static_cast<int>(quiver::Status::cancelled), "the C status is the engine's");

qv_knn_graph_params_t default_knn_graph_params() {
  qv_knn_graph_params_t p{};
  p.struct_size = sizeof p;
  p.method = QV_KNN_GRAPH_AUTO;
  p.target_recall = 0.95;
  p.seed = 1234;
  return p;
}

constexpr size_t kVersions[] = {
    QV_FIELD_END(qv_knn_graph_params_t, method),   QV_FIELD_END(qv_knn_graph_params_t, target_recall),
    QV_FIELD_END(qv_knn_graph_params_t, seed),     QV_FIELD_END(qv_knn_graph_params_t, recall_sample),
    QV_FIELD_END(qv_knn_graph_params_t, progress), QV_FIELD_END(qv_knn_graph_params_t, user_data)};

// What the unsized qv_knn_graph_params_init writes, forever.
constexpr size_t kUnsizedInitSize = QV_FIELD_END(qv_knn_graph_params_t, user_data);

}  // namespace

extern "C" {

qv_status_t qv_knn_graph_params_init_sized(qv_knn_graph_params_t* params, size_t size) {
  return guarded([&] { quiver::capi::init_params(params, size, default_knn_graph_params(), "params", kVersions); });
}

// Parenthesised: the header's macro of this name calls the sized function.
qv_status_t(qv_knn_graph_params_init)(qv_knn_graph_params_t* params) {
  return guarded(
      [&] { quiver::capi::init_params(params, kUnsizedInitSize, default_knn_graph_params(), "params", kVersions); });
}

qv_status_t qv_knn_graph(qv_context_t* context, qv_metric_t metric, int64_t dim, int64_t n, const float* x,
                         uint32_t k, const qv_knn_graph_params_t* params, float* distances, int64_t* ids,
                         double* recall) {
  return guarded([&] {
    require_pointer(context, "context");
    require(n >= 2, "n = ", n, " must be at least 2");
    require(k >= 1 && int64_t{k} < n && int64_t{k} < quiver::kMaxK, "k = ", k, " is outside 1 .. ",
            std::min<int64_t>(n, quiver::kMaxK) - 1, " (n = ", n, ")");
    require_pointer(x, "x");
    require_pointer(ids, "ids");
    const qv_knn_graph_params_t p = quiver::capi::read_params(params, default_knn_graph_params(), "params", kVersions);
    require(p.method >= QV_KNN_GRAPH_AUTO && p.method <= QV_KNN_GRAPH_APPROXIMATE, "params->method = ", p.method,
            " is not a QV_KNN_GRAPH_* value");
    require(p.target_recall > 0 && p.target_recall <= 1, "params->target_recall = ", p.target_recall,
            " is outside (0, 1]");
    require(p.recall_sample >= 0, "params->recall_sample = ", p.recall_sample, " is negative");
    quiver::KnnGraphOptions options;
    options.k = k;
    options.method = static_cast<quiver::KnnGraphMethod>(p.method);
    options.target_recall = p.target_recall;
    options.seed = p.seed;
    options.recall_sample = p.recall_sample;
    options.progress = quiver::capi::progress_callback(p.progress, p.user_data);
    const quiver::KnnGraphStats stats = quiver::knn_graph_ids64(
        *context->context, static_cast<quiver::Metric>(metric), dim, n, x, options, ids, distances);
    if (recall != nullptr) *recall = stats.recall;
  });
}

}  // extern "C"
