// A context: where work runs. It owns the CPU thread pool and, on a CUDA device, the GPU resources.
#pragma once

#include <cstdint>
#include <memory>

#include "cpp/backend/gpu.h"
#include "cpp/core/thread_pool.h"

namespace quiver {

enum class DeviceKind : int32_t { automatic = 0, cpu = 1, cuda = 2 };

struct ContextOptions {
  DeviceKind device = DeviceKind::automatic;
  int32_t device_id = 0;
  int32_t cpu_threads = 0;  // 0: one per core
};

class Context {
 public:
  // Resolves AUTO to CUDA when a device is usable, else to the CPU. Throws no_device for an explicit
  // CUDA request that cannot be met.
  explicit Context(const ContextOptions& options);

  DeviceKind device() const { return device_; }
  int32_t device_id() const { return device_ == DeviceKind::cuda ? device_id_ : -1; }
  ThreadPool& pool() const { return *pool_; }
  // The CUDA device's streams, cuBLAS handles and memory pool; only on a CUDA context.
  gpu::Resources& gpu() const { return *gpu_; }

 private:
  DeviceKind device_;
  int32_t device_id_;
  std::unique_ptr<ThreadPool> pool_;
  gpu::ResourcesPtr gpu_;
};

}  // namespace quiver
