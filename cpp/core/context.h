// A context: where work runs. It owns the CPU thread pool and, on a CUDA device, the GPU resources.
#pragma once

#include <cstdint>
#include <memory>

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
  // True when the caller asked for AUTO: index kinds without a GPU implementation run on the CPU.
  bool automatic() const { return automatic_; }
  ThreadPool& pool() const { return *pool_; }

 private:
  DeviceKind device_;
  int32_t device_id_;
  bool automatic_;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace quiver
