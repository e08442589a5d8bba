#include "cpp/core/context.h"

#include <thread>

#include "cpp/backend/gpu.h"
#include "cpp/core/error.h"

namespace quiver {

Context::Context(const ContextOptions& options)
    : device_(options.device), device_id_(options.device_id) {
  require(options.device == DeviceKind::automatic || options.device == DeviceKind::cpu ||
              options.device == DeviceKind::cuda,
          "options.device: ", static_cast<int>(options.device),
          " is not QV_DEVICE_AUTO, QV_DEVICE_CPU or QV_DEVICE_CUDA");
  require(options.cpu_threads >= 0 && options.cpu_threads <= 4096, "options.cpu_threads: ",
          options.cpu_threads, " is outside 0 .. 4096");
  require(options.device_id >= 0, "options.device_id: ", options.device_id, " is negative");

  if (device_ != DeviceKind::cpu) {
    const int count = gpu::device_count();
    if (options.device_id < count) {
      device_ = DeviceKind::cuda;
    } else if (device_ == DeviceKind::cuda) {
      if (count == 0) fail(Status::no_device, "QV_DEVICE_CUDA: ", gpu::unavailable_reason());
      fail(Status::no_device, "options.device_id: CUDA device ", options.device_id,
           " does not exist (", count, " device(s) found)");
    } else {
      device_ = DeviceKind::cpu;
    }
  }

  int threads = options.cpu_threads;
  if (threads == 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  pool_ = std::make_unique<ThreadPool>(threads > 0 ? threads : 1);
  if (device_ == DeviceKind::cuda) {
    gpu::ResourcesOptions resources;
    resources.device = device_id_;
    gpu_ = gpu::make_resources(resources);
  }
}

}  // namespace quiver
