#include "capi/search_options.h"

#include "capi/guard.h"

namespace quiver::capi {

static_assert(QV_NPROBE_DEFAULT == kNprobeDefault, "the engine's nprobe default is the C API's");

SearchOptions search_options(const qv_search_params_t* params) {
  qv_search_params_t defaults{};
  defaults.struct_size = sizeof defaults;
  defaults.nprobe = QV_NPROBE_DEFAULT;
  static constexpr size_t kVersions[] = {
      QV_FIELD_END(qv_search_params_t, filter_bits),  QV_FIELD_END(qv_search_params_t, nprobe),
      QV_FIELD_END(qv_search_params_t, search_width), QV_FIELD_END(qv_search_params_t, compute_mode),
      QV_FIELD_END(qv_search_params_t, refine_factor), QV_FIELD_END(qv_search_params_t, max_range_results)};
  const qv_search_params_t p = read_params(params, defaults, "params", kVersions);
  require(p.filter != nullptr || p.filter_bits == 0, "params->filter is NULL but params->filter_bits = ",
                  p.filter_bits);
  SearchOptions options;
  options.filter.bits = p.filter;
  options.filter.nbits = p.filter_bits;
  options.nprobe = p.nprobe;
  options.search_width = p.search_width;
  require(p.compute_mode >= QV_COMPUTE_FP32 && p.compute_mode <= QV_COMPUTE_BF16, "params->compute_mode = ",
          p.compute_mode, " is not a QV_COMPUTE_* value");
  options.compute_mode = static_cast<ComputeMode>(p.compute_mode);
  options.refine_factor = p.refine_factor;
  require(p.max_range_results >= 0, "params->max_range_results = ", p.max_range_results, " is negative");
  options.max_range_results = p.max_range_results;
  return options;
}

}  // namespace quiver::capi
