// A caching pool of device memory: blocks released by one call are kept and handed to the next, so
// a search repeated with the same shapes calls cudaMalloc only the first time (warm-up).
//
// Reuse is safe because every user of a Resources holds its Session (resources.h), which waits for
// the streams before another call may take the lock: a released block is never handed out while a
// kernel that used it may still run, except within one call, where the stream order decides.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

namespace quiver::gpu {

struct PoolStats {
  int64_t in_use_bytes = 0;
  int64_t cached_bytes = 0;
  int64_t peak_bytes = 0;          // most in use plus cached at any time
  int64_t device_allocations = 0;  // cudaMalloc calls so far
};

class DevicePool {
 public:
  // Every cudaMalloc and cudaFree of the pool runs on `device`, whatever device is current.
  explicit DevicePool(int device) : device_(device) {}
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  int device() const { return device_; }
  // At least `bytes` (256-byte aligned), on the pool's device. When cudaMalloc fails the
  // cache is freed and the allocation retried; then out_of_device_memory is thrown.
  void* allocate(size_t bytes);
  void release(void* block) noexcept;
  // Zeroes the first `bytes` of `block` (one this pool handed out) on `stream` the first time only:
  // later calls, whoever holds the block then, leave what it holds. For memory that a kernel writes
  // in full where compute-sanitizer's initcheck does not see it (cuBLAS's tensor-core GEMM tiles):
  // initcheck then counts it written, without a memset every call.
  void zero_once(void* block, size_t bytes, cudaStream_t stream);
  // Frees every cached (unused) block.
  void trim() noexcept;
  PoolStats stats() const;

 private:
  void trim_locked() noexcept;

  const int device_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> cached_;    // size -> block
  std::unordered_map<void*, size_t> used_;  // block -> size
  std::unordered_map<void*, size_t> zeroed_;  // block -> bytes zero_once cleared
  PoolStats stats_;
};

// A typed block of the pool, returned on destruction.
template <typename T>
class PoolBuffer {
 public:
  PoolBuffer() = default;
  PoolBuffer(DevicePool& pool, int64_t count)
      : pool_(&pool), data_(count > 0 ? static_cast<T*>(pool.allocate(size_t(count) * sizeof(T))) : nullptr),
        count_(count) {}
  ~PoolBuffer() { reset(); }
  PoolBuffer(PoolBuffer&& o) noexcept : pool_(o.pool_), data_(o.data_), count_(o.count_) {
    o.data_ = nullptr;
    o.count_ = 0;
  }
  PoolBuffer& operator=(PoolBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = o.pool_;
      data_ = o.data_;
      count_ = o.count_;
      o.data_ = nullptr;
      o.count_ = 0;
    }
    return *this;
  }
  PoolBuffer(const PoolBuffer&) = delete;
  PoolBuffer& operator=(const PoolBuffer&) = delete;

  T* get() const { return data_; }
  int64_t size() const { return count_; }
  void reset() noexcept {
    if (data_ != nullptr) pool_->release(data_);
    data_ = nullptr;
    count_ = 0;
  }

 private:
  DevicePool* pool_ = nullptr;
  T* data_ = nullptr;
  int64_t count_ = 0;
};

}  // namespace quiver::gpu
