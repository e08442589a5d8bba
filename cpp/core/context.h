// A context: where work runs. It owns the CPU thread pool and, on CUDA devices, the GPU resources of
// each device it was given.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/thread_pool.h"

namespace quiver {

enum class DeviceKind : int32_t { automatic = 0, cpu = 1, cuda = 2 };

struct ContextOptions {
  DeviceKind device = DeviceKind::automatic;
  int32_t device_id = 0;
  int32_t cpu_threads = 0;  // 0: one per core
  // Several CUDA devices: every visible one, or the ordinals in device_ids (repeats give logical
  // devices that share one GPU); neither: device_id alone.
  bool all_devices = false;
  std::vector<int32_t> device_ids;
};

class Context {
 public:
  // Resolves AUTO to CUDA when a device is usable, else to the CPU. Throws no_device for an explicit
  // CUDA request that cannot be met.
  explicit Context(const ContextOptions& options);

  DeviceKind device() const { return device_; }
  // The CUDA ordinal of the first device; -1 on the CPU.
  int32_t device_id() const { return device_ == DeviceKind::cuda ? device_id_ : -1; }
  ThreadPool& pool() const { return *pool_; }
  // The first CUDA device's streams, cuBLAS handles and memory pool; only on a CUDA context.
  gpu::Resources& gpu() const { return *gpu_; }

  // One single-device context per device, in the order given (this context first): plain indexes
  // live on the first; the composite kinds (cpp/multi/) spread over all. {this} on the CPU.
  const std::vector<Context*>& devices() const { return devices_; }
  // The CUDA ordinals of devices(); empty on the CPU.
  std::vector<int32_t> device_ids() const;

 private:
  // A further device of a multi-device context, sharing its thread pool.
  Context(int32_t device_id, std::shared_ptr<ThreadPool> pool);
  void resolve_devices(const ContextOptions& options, std::vector<int32_t>& ids);

  DeviceKind device_;
  int32_t device_id_;
  std::shared_ptr<ThreadPool> pool_;
  gpu::ResourcesPtr gpu_;
  std::vector<std::unique_ptr<Context>> further_devices_;
  std::vector<Context*> devices_;
};

}  // namespace quiver
