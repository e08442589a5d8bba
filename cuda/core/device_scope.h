// Makes a device current for a scope and restores the caller's device on the way out. Every entry
// into the CUDA backend, and every allocation or free of device memory, runs under one, so that a
// context on device 1 never touches device 0 whatever device the calling thread has current.
#pragma once

#include <cuda_runtime.h>

#include "cuda/core/error.h"

namespace quiver::gpu {

class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    QV_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) QV_CUDA_CHECK(cudaSetDevice(device));
    switched_ = previous_ != device;
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

// The same for destructors and other noexcept paths: errors are ignored (there is nothing to report
// them to), and the device is restored only when it was changed.
class DeviceScopeNoThrow {
 public:
  explicit DeviceScopeNoThrow(int device) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess || previous_ == device) return;
    switched_ = cudaSetDevice(device) == cudaSuccess;
    // A refused device (the destructor of a pool whose Resources rejected it) must not stay the
    // runtime's last error: the next launch check on this thread would report it as its own.
    if (!switched_) cudaGetLastError();
  }
  ~DeviceScopeNoThrow() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceScopeNoThrow(const DeviceScopeNoThrow&) = delete;
  DeviceScopeNoThrow& operator=(const DeviceScopeNoThrow&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace quiver::gpu
