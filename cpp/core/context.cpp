#include "cpp/core/context.h"

#include <thread>

#include "cpp/backend/gpu.h"
#include "cpp/core/error.h"

namespace quiver {

namespace {

// Largest number of devices in one context (QV_MAX_DEVICES).
constexpr size_t kMaxDevices = 64;

gpu::ResourcesPtr make_device_resources(int32_t device_id) {
  gpu::ResourcesOptions resources;
  resources.device = device_id;
  return gpu::make_resources(resources);
}

}  // namespace

Context::Context(const ContextOptions& options)
    : device_(options.device), device_id_(options.device_id) {
  require(options.device == DeviceKind::automatic || options.device == DeviceKind::cpu ||
              options.device == DeviceKind::cuda,
          "options.device: ", static_cast<int>(options.device),
          " is not QV_DEVICE_AUTO, QV_DEVICE_CPU or QV_DEVICE_CUDA");
  require(options.cpu_threads >= 0 && options.cpu_threads <= 4096, "options.cpu_threads: ",
          options.cpu_threads, " is outside 0 .. 4096");
  require(options.device_id >= 0, "options.device_id: ", options.device_id, " is negative");

  std::vector<int32_t> ids;
  resolve_devices(options, ids);

  int threads = options.cpu_threads;
  if (threads == 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  pool_ = std::make_shared<ThreadPool>(threads > 0 ? threads : 1);
  devices_.push_back(this);
  if (device_ == DeviceKind::cuda) {
    device_id_ = ids.front();
    gpu_ = make_device_resources(device_id_);
    for (size_t i = 1; i < ids.size(); ++i) {
      further_devices_.push_back(std::unique_ptr<Context>(new Context(ids[i], pool_)));
      devices_.push_back(further_devices_.back().get());
    }
  }
}

Context::Context(int32_t device_id, std::shared_ptr<ThreadPool> pool)
    : device_(DeviceKind::cuda), device_id_(device_id), pool_(std::move(pool)) {
  gpu_ = make_device_resources(device_id_);
  devices_.push_back(this);
}

// Sets device_ to cuda or cpu and ids to the CUDA ordinals to open (empty on the CPU).
void Context::resolve_devices(const ContextOptions& options, std::vector<int32_t>& ids) {
  const bool several = options.all_devices || !options.device_ids.empty();
  if (several) {
    require(options.device != DeviceKind::cpu,
            "options.device_ids: device ids need QV_DEVICE_CUDA or QV_DEVICE_AUTO, not QV_DEVICE_CPU");
    require(options.device_ids.size() <= kMaxDevices, "options.device_count: ", options.device_ids.size(),
            " is more than ", kMaxDevices, " (QV_MAX_DEVICES)");
  }
  if (device_ == DeviceKind::cpu) return;

  const int count = gpu::device_count();
  if (options.all_devices) {
    for (int32_t d = 0; d < count; ++d) ids.push_back(d);
  } else if (several) {
    for (size_t i = 0; i < options.device_ids.size(); ++i)
      require(options.device_ids[i] >= 0, "options.device_ids[", i, "]: ", options.device_ids[i], " is negative");
    ids = options.device_ids;
  } else {
    ids.push_back(options.device_id);
  }

  bool usable = !ids.empty();
  for (const int32_t id : ids) usable = usable && id < count;
  if (usable) {
    device_ = DeviceKind::cuda;
    return;
  }
  if (device_ == DeviceKind::automatic) {
    device_ = DeviceKind::cpu;
    ids.clear();
    return;
  }
  if (count == 0) fail(Status::no_device, "QV_DEVICE_CUDA: ", gpu::unavailable_reason());
  for (const int32_t id : ids)
    if (id >= count)
      fail(Status::no_device, several ? "options.device_ids" : "options.device_id", ": CUDA device ", id,
           " does not exist (", count, " device(s) found)");
}

std::vector<int32_t> Context::device_ids() const {
  std::vector<int32_t> ids;
  if (device_ != DeviceKind::cuda) return ids;
  for (const Context* device : devices_) ids.push_back(device->device_id_);
  return ids;
}

}  // namespace quiver
