// Device memory owned by an index (inverted lists, model copies): allocated with cudaMalloc rather
// than from the pool, which is for the short-lived buffers of calls. When the device is full, the
// pool's cached blocks are returned to the driver and the allocation is tried once more; then
// out_of_device_memory is thrown (nothing was allocated). Sizes are rounded up to whole 16-byte
// slots: the selection kernels read arrays (norms, keys) in 16-byte cp.async slots, which must lie
// inside the allocation even where only part of a slot is used. The buffer lives on the pool's
// device and is allocated and freed there, whatever device is current.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/fault_injection.h"
#include "cuda/core/memory_pool.h"

namespace quiver::gpu {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DevicePool& pool, int64_t count) : device_(pool.device()), count_(count) {
    if (count <= 0) {
      count_ = 0;
      return;
    }
    check_injected_allocation_failure("device buffer");
    DeviceScope scope(device_);
    const size_t bytes = (size_t(count) * sizeof(T) + 15) / 16 * 16;
    cudaError_t status = cudaMalloc(&data_, bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      pool.trim();
      status = cudaMalloc(&data_, bytes);
    }
    if (status != cudaSuccess) {
      data_ = nullptr;
      count_ = 0;
      QV_CUDA_CHECK(status);
    }
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : device_(o.device_), data_(o.data_), count_(o.count_) {
    o.data_ = nullptr;
    o.count_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      data_ = o.data_;
      count_ = o.count_;
      o.data_ = nullptr;
      o.count_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return data_; }
  int64_t size() const { return count_; }
  int64_t bytes() const { return count_ * int64_t(sizeof(T)); }
  void reset() noexcept {
    if (data_ != nullptr) {
      DeviceScopeNoThrow scope(device_);
      cudaFree(data_);
    }
    data_ = nullptr;
    count_ = 0;
  }

 private:
  int device_ = 0;
  T* data_ = nullptr;
  int64_t count_ = 0;
};

}  // namespace quiver::gpu
