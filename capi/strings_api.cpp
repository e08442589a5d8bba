// Entry points for indexes of byte strings (QV_METRIC_EDIT): each checks its pointers and calls the
// engine's string calls (cpp/index/index.h), which validate the offsets.
#include <memory>

#include "capi/guard.h"
#include "capi/handles.h"
#include "capi/search_options.h"

using quiver::capi::guarded;
using quiver::capi::require_pointer;

namespace {

quiver::Strings strings_of(int64_t n, const int64_t* offsets, const uint8_t* bytes) {
  if (n > 0) require_pointer(offsets, "offsets");
  return quiver::Strings{n, offsets, bytes};
}

}  // namespace

extern "C" {

qv_status_t qv_index_add_strings(qv_index_t* index, int64_t n, const int64_t* offsets, const uint8_t* bytes,
                                 const int64_t* ids) {
  return guarded([&] {
    require_pointer(index, "index");
    index->index->add_strings(strings_of(n, offsets, bytes), ids);
  });
}

qv_status_t qv_index_search_strings(const qv_index_t* index, int64_t nq, const int64_t* offsets,
                                    const uint8_t* bytes, uint32_t k, const qv_search_params_t* params,
                                    float* distances, int64_t* ids) {
  return guarded([&] {
    require_pointer(index, "index");
    if (nq > 0) {
      require_pointer(distances, "distances");
      require_pointer(ids, "ids");
    }
    index->index->search_strings(strings_of(nq, offsets, bytes), k, quiver::capi::search_options(params),
                                 distances, ids);
  });
}

qv_status_t qv_index_range_search_strings(const qv_index_t* index, int64_t nq, const int64_t* offsets,
                                          const uint8_t* bytes, float radius, const qv_search_params_t* params,
                                          qv_range_result_t** out) {
  return guarded([&] {
    require_pointer(out, "out");
    *out = nullptr;
    require_pointer(index, "index");
    auto result = std::make_unique<qv_range_result>();
    result->result = index->index->range_search_strings(strings_of(nq, offsets, bytes), radius,
                                                        quiver::capi::search_options(params));
    *out = result.release();
  });
}

}  // extern "C"
