#include "cpp/index/factory.h"

#include "cpp/core/error.h"
#include "cpp/index/flat.h"
#include "cpp/index/flat_gpu.h"
#include "cpp/index/graph_index.h"
#include "cpp/index/graph_spec.h"
#include "cpp/index/ivf_gpu.h"
#include "cpp/index/ivf_index.h"
#include "cpp/index/ivf_spec.h"
#include "cpp/metric/metric_index.h"
#include "cpp/metric/metric_spec.h"
#include "cpp/multi/composite_index.h"
#include "cpp/multi/multi_spec.h"

namespace quiver {

std::unique_ptr<Index> create_index(Context& context, const std::string& descriptor, int64_t dim,
                                    Metric metric) {
  require(is_known_metric(static_cast<int32_t>(metric)), "metric: ", static_cast<int32_t>(metric),
          " is not a QV_METRIC_* value (L2, INNER_PRODUCT, COSINE, L1, LINF, EDIT)");
  if (is_multi_descriptor(descriptor)) return create_multi_index(context, context.devices(), descriptor, dim, metric);
  if (is_metric_descriptor(descriptor))
    return std::make_unique<MetricIndex>(context, descriptor, dim, metric, parse_metric_descriptor(descriptor));
  if (!is_valid_metric(static_cast<int32_t>(metric))) {
    // L1, L-infinity and edit distance have no GEMM form: the metric-space kinds serve them.
    if (descriptor == "Flat") return std::make_unique<MetricIndex>(context, descriptor, dim, metric, MetricSpec{});
    fail(Status::unsupported, "descriptor \"", descriptor, "\": ", metric_name(metric),
         " indexes are \"Flat\", \"LC<b>\" or \"SSS<alpha>\"");
  }
  if (descriptor == "Flat") {
    if (context.device() == DeviceKind::cuda) return std::make_unique<GpuFlatIndex>(context, descriptor, dim, metric);
    return std::make_unique<FlatIndex>(context, descriptor, dim, metric);
  }
  if (is_ivf_descriptor(descriptor)) {
    const IvfSpec spec = parse_ivf_descriptor(descriptor, dim);
    if (context.device() == DeviceKind::cuda)
      return std::make_unique<GpuIvfIndex>(context, descriptor, dim, metric, spec);
    return std::make_unique<IvfIndex>(context, descriptor, dim, metric, spec);
  }
  if (is_graph_descriptor(descriptor)) {
    // Host-resident on every context; a CUDA context computes the build's k-NN graph on the GPU.
    return std::make_unique<GraphIndex>(context, descriptor, dim, metric, parse_graph_descriptor(descriptor));
  }
  fail(Status::invalid_argument, "descriptor: \"", descriptor,
       "\" is not a known index kind (known: \"Flat\", \"IVF<nlist>,Flat\", \"IVF<nlist>,PQ<M>\", "
       "\"OPQ<M>,IVF<nlist>,PQ<M>\", with optional \",Refine\" and \",HostIds\" after IVF ones; "
       "\"Graph<R>\" or \"Graph<R>,K<k>\": a graph of out-degree R = 2 .. 1024 pruned from the "
       "k-NN graph of k neighbours, default k = R; metric-space kinds \"LC<b>\" and \"SSS<alpha>\"; any of them over several devices as "
       "\"Sharded<S>,<kind>\" or \"Replicated<R>,<kind>\")");
}

}  // namespace quiver
