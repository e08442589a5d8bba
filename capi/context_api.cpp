// Contexts and search parameters.
#include "capi/guard.h"
#include "capi/handles.h"
#include "cpp/backend/gpu.h"

using quiver::capi::guarded;
using quiver::capi::require_pointer;

namespace {

qv_context_options_t default_context_options() {
  qv_context_options_t o{};
  o.struct_size = sizeof o;
  o.device = QV_DEVICE_AUTO;
  o.device_id = 0;
  o.cpu_threads = 0;
  return o;
}

constexpr size_t kVersions[] = {QV_FIELD_END(qv_context_options_t, device), QV_FIELD_END(qv_context_options_t, device_id),
                                QV_FIELD_END(qv_context_options_t, cpu_threads),
                                QV_FIELD_END(qv_context_options_t, device_ids)};

// What the unsized qv_context_options_init writes, forever (the struct before device_count).
constexpr size_t kUnsizedInitSize = QV_FIELD_END(qv_context_options_t, cpu_threads);

}  // namespace

extern "C" {

qv_status_t qv_context_options_init_sized(qv_context_options_t* options, size_t size) {
  return guarded([&] { quiver::capi::init_params(options, size, default_context_options(), "options", kVersions); });
}

// Parenthesised: the header's macro of this name calls the sized function.
qv_status_t(qv_context_options_init)(qv_context_options_t* options) {
  return guarded(
      [&] { quiver::capi::init_params(options, kUnsizedInitSize, default_context_options(), "options", kVersions); });
}

qv_status_t qv_context_create(const qv_context_options_t* options, qv_context_t** out) {
  return guarded([&] {
    require_pointer(out, "out");
    *out = nullptr;
    const qv_context_options_t o =
        quiver::capi::read_params(options, default_context_options(), "options", kVersions);
    quiver::ContextOptions engine;
    engine.device = static_cast<quiver::DeviceKind>(o.device);
    engine.device_id = o.device_id;
    engine.cpu_threads = o.cpu_threads;
    if (o.device_count == QV_ALL_DEVICES) {
      engine.all_devices = true;
    } else {
      quiver::require(o.device_count >= 0 && o.device_count <= QV_MAX_DEVICES, "options.device_count: ",
                      o.device_count, " is outside 0 .. QV_MAX_DEVICES (", QV_MAX_DEVICES, ") and not QV_ALL_DEVICES");
      engine.device_ids.assign(o.device_ids, o.device_ids + o.device_count);
    }
    *out = new qv_context{std::make_shared<quiver::Context>(engine)};
  });
}

void qv_context_free(qv_context_t* context) {
  guarded([&] { delete context; });
}

qv_status_t qv_context_device(const qv_context_t* context, qv_device_kind_t* kind,
                              int32_t* device_id) {
  return guarded([&] {
    require_pointer(context, "context");
    if (kind) *kind = static_cast<qv_device_kind_t>(context->context->device());
    if (device_id) *device_id = context->context->device_id();
  });
}

qv_status_t qv_context_devices(const qv_context_t* context, int32_t* device_ids, int32_t capacity,
                              int32_t* count) {
  return guarded([&] {
    require_pointer(context, "context");
    require_pointer(count, "count");
    quiver::require(capacity >= 0, "capacity = ", capacity, " is negative");
    if (capacity > 0) require_pointer(device_ids, "device_ids");
    const std::vector<int32_t> ids = context->context->device_ids();
    *count = static_cast<int32_t>(ids.size());
    for (size_t i = 0; i < ids.size() && i < static_cast<size_t>(capacity); ++i) device_ids[i] = ids[i];
  });
}

qv_status_t qv_cuda_device_count(int32_t* count) {
  return guarded([&] {
    require_pointer(count, "count");
    *count = quiver::gpu::device_count();
  });
}

}  // extern "C"
