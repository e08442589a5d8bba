// Index entry points: each checks its pointers and calls the engine (cpp/index, cpp/io).
#include <cstdlib>
#include <cstring>

#include "capi/guard.h"
#include "capi/handles.h"
#include "capi/search_options.h"
#include "cpp/index/factory.h"
#include "cpp/io/index_io.h"

using quiver::capi::guarded;
using quiver::capi::require_pointer;

namespace {

void require_vectors(const float* x, int64_t n, const char* name) {
  if (n > 0) require_pointer(x, name);
}

qv_index_t* wrap(const qv_context_t* context, std::unique_ptr<quiver::Index> index) {
  return new qv_index{context->context, std::move(index)};
}

constexpr size_t kInfoVersions[] = {
    QV_FIELD_END(qv_index_info_t, dim),        QV_FIELD_END(qv_index_info_t, metric),
    QV_FIELD_END(qv_index_info_t, is_trained), QV_FIELD_END(qv_index_info_t, count),
    QV_FIELD_END(qv_index_info_t, device),     QV_FIELD_END(qv_index_info_t, device_id),
    QV_FIELD_END(qv_index_info_t, host_bytes), QV_FIELD_END(qv_index_info_t, device_bytes),
    QV_FIELD_END(qv_index_info_t, descriptor)};

// What the unsized qv_index_info_init writes, forever.
constexpr size_t kInfoUnsizedInitSize = QV_FIELD_END(qv_index_info_t, descriptor);

}  // namespace

extern "C" {

qv_status_t qv_index_create(qv_context_t* context, const char* descriptor, int64_t dim,
                            qv_metric_t metric, qv_index_t** out) {
  return guarded([&] {
    require_pointer(out, "out");
    *out = nullptr;
    require_pointer(context, "context");
    require_pointer(descriptor, "descriptor");
    auto index = quiver::create_index(*context->context, descriptor, dim,
                                      static_cast<quiver::Metric>(metric));
    *out = wrap(context, std::move(index));
  });
}

void qv_index_free(qv_index_t* index) {
  guarded([&] { delete index; });
}

qv_status_t qv_index_train(qv_index_t* index, int64_t n, const float* x) {
  return guarded([&] {
    require_pointer(index, "index");
    require_vectors(x, n, "x");
    index->index->train(n, x);
  });
}

qv_status_t qv_index_set_progress(qv_index_t* index, qv_progress_fn_t fn, void* user_data) {
  return guarded([&] {
    require_pointer(index, "index");
    index->index->set_progress(quiver::capi::progress_callback(fn, user_data));
  });
}

qv_status_t qv_index_add(qv_index_t* index, int64_t n, const float* x, const int64_t* ids) {
  return guarded([&] {
    require_pointer(index, "index");
    require_vectors(x, n, "x");
    index->index->add(n, x, ids);
  });
}

qv_status_t qv_index_search(const qv_index_t* index, int64_t nq, const float* queries, uint32_t k,
                            const qv_search_params_t* params, float* distances, int64_t* ids) {
  return guarded([&] {
    require_pointer(index, "index");
    require_vectors(queries, nq, "queries");
    if (nq > 0) {
      require_pointer(distances, "distances");
      require_pointer(ids, "ids");
    }
    index->index->search(nq, queries, k, quiver::capi::search_options(params), distances, ids);
  });
}

qv_status_t qv_index_range_search(const qv_index_t* index, int64_t nq, const float* queries,
                                  float radius, const qv_search_params_t* params,
                                  qv_range_result_t** out) {
  return guarded([&] {
    require_pointer(out, "out");
    *out = nullptr;
    require_pointer(index, "index");
    require_vectors(queries, nq, "queries");
    auto result = std::make_unique<qv_range_result>();
    result->result = index->index->range_search(nq, queries, radius, quiver::capi::search_options(params));
    *out = result.release();
  });
}

qv_status_t qv_range_result_get(const qv_range_result_t* result, int64_t* nq, const int64_t** lims,
                                const int64_t** ids, const float** distances) {
  return guarded([&] {
    require_pointer(result, "result");
    const quiver::RangeResult& r = result->result;
    if (nq) *nq = static_cast<int64_t>(r.lims.size()) - 1;
    if (lims) *lims = r.lims.data();
    if (ids) *ids = r.ids.data();
    if (distances) *distances = r.distances.data();
  });
}

void qv_range_result_free(qv_range_result_t* result) {
  guarded([&] { delete result; });
}

qv_status_t qv_index_remove(qv_index_t* index, int64_t n, const int64_t* ids, int64_t* removed) {
  return guarded([&] {
    require_pointer(index, "index");
    if (n > 0) require_pointer(ids, "ids");
    const int64_t count = index->index->remove(n, ids);
    if (removed) *removed = count;
  });
}

qv_status_t qv_index_info_init_sized(qv_index_info_t* info, size_t size) {
  return guarded([&] { quiver::capi::init_params(info, size, qv_index_info_t{}, "info", kInfoVersions); });
}

// Parenthesised: the header's macro of this name calls the sized function.
qv_status_t(qv_index_info_init)(qv_index_info_t* info) {
  return guarded([&] { quiver::capi::init_params(info, kInfoUnsizedInitSize, qv_index_info_t{}, "info", kInfoVersions); });
}

qv_status_t qv_index_info(const qv_index_t* index, qv_index_info_t* info) {
  return guarded([&] {
    require_pointer(index, "index");
    require_pointer(info, "info");
    const uint32_t caller_size = info->struct_size;
    quiver::capi::check_struct_size(caller_size, sizeof(qv_index_info_t), kInfoVersions, "info");
    const quiver::Index& ix = *index->index;
    qv_index_info_t full{};
    full.struct_size = caller_size < sizeof full ? caller_size : sizeof full;
    full.dim = ix.dim();
    full.metric = static_cast<qv_metric_t>(ix.metric());
    full.is_trained = ix.is_trained() ? 1 : 0;
    full.count = ix.count();
    full.device = static_cast<qv_device_kind_t>(ix.device());
    full.device_id = ix.device() == quiver::DeviceKind::cuda ? ix.context().device_id() : -1;
    const quiver::MemoryUse memory = ix.memory();
    full.host_bytes = memory.host_bytes;
    full.device_bytes = memory.device_bytes;
    std::strncpy(full.descriptor, ix.descriptor().c_str(), sizeof full.descriptor - 1);
    // An older caller's struct is shorter: write only what it has room for.
    std::memcpy(info, &full, full.struct_size);
  });
}

qv_status_t qv_index_save(const qv_index_t* index, const char* path) {
  return guarded([&] {
    require_pointer(index, "index");
    require_pointer(path, "path");
    quiver::save_to_file(*index->index, path);
  });
}

qv_status_t qv_index_load(qv_context_t* context, const char* path, qv_index_t** out) {
  return guarded([&] {
    require_pointer(out, "out");
    *out = nullptr;
    require_pointer(context, "context");
    require_pointer(path, "path");
    *out = wrap(context, quiver::load_from_file(*context->context, path));
  });
}

qv_status_t qv_index_save_buffer(const qv_index_t* index, void** data, size_t* size) {
  return guarded([&] {
    require_pointer(data, "data");
    require_pointer(size, "size");
    *data = nullptr;
    *size = 0;
    require_pointer(index, "index");
    const std::vector<uint8_t> bytes = quiver::save_to_bytes(*index->index);
    void* buffer = std::malloc(bytes.empty() ? 1 : bytes.size());
    if (!buffer) throw std::bad_alloc();
    std::memcpy(buffer, bytes.data(), bytes.size());
    *data = buffer;
    *size = bytes.size();
  });
}

qv_status_t qv_index_load_buffer(qv_context_t* context, const void* data, size_t size,
                                 qv_index_t** out) {
  return guarded([&] {
    require_pointer(out, "out");
    *out = nullptr;
    require_pointer(context, "context");
    if (size > 0) require_pointer(data, "data");
    *out = wrap(context, quiver::load_from_bytes(*context->context,
                                                 static_cast<const uint8_t*>(data), size));
  });
}

void qv_buffer_free(void* data) { std::free(data); }

}  // extern "C"
