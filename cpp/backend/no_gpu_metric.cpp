// The GPU metric-space search of a build without CUDA.
#ifndef QUIVER_HAVE_CUDA

#include "cpp/backend/gpu_metric.h"
#include "cpp/core/error.h"

namespace quiver::gpu {

namespace {

[[noreturn]] void no_cuda() {
  throw Error(Status::unsupported, "GPU metric-space search: " + unavailable_reason());
}

}  // namespace

MetricDevice* metric_create(Resources&, Metric, int64_t) { no_cuda(); }

void metric_free(MetricDevice*) noexcept {}

void metric_upload(Resources&, MetricDevice&, const Objects&, const LcTables*, const SssTables*) { no_cuda(); }

int64_t metric_rows(const MetricDevice&) { return 0; }

int64_t metric_device_bytes(const MetricDevice&) { return 0; }

MetricHits metric_range_search(Resources&, const MetricDevice&, MetricMethod, const Objects&, float, const RowFilter&,
                               int64_t) {
  no_cuda();
}

void metric_knn(Resources&, const MetricDevice&, MetricMethod, const Objects&, int64_t, const RowFilter&, float*,
                int64_t*) {
  no_cuda();
}

}  // namespace quiver::gpu

#endif
