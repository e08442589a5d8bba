#include "cuda/core/memory_pool.h"

#include <cuda_runtime.h>

#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/fault_injection.h"

namespace quiver::gpu {

namespace {

// Sizes are rounded so that calls of nearby shapes share blocks: to 256 bytes below 1 MiB, to
// 2 MiB above (the granularity the driver maps large allocations with).
constexpr size_t kSmallRound = 256;
constexpr size_t kLargeThreshold = size_t(1) << 20;
constexpr size_t kLargeRound = size_t(2) << 20;
// A cached block serves a request up to this many times smaller than itself; beyond that a new
// block is allocated rather than tying up a large one.
constexpr size_t kMaxWaste = 2;

size_t round_size(size_t bytes) {
  if (bytes == 0) bytes = 1;
  const size_t unit = bytes < kLargeThreshold ? kSmallRound : kLargeRound;
  return (bytes + unit - 1) / unit * unit;
}

}  // namespace

DevicePool::~DevicePool() {
  DeviceScopeNoThrow scope(device_);
  trim();
  // Blocks still in use belong to objects that outlive their Resources: a caller bug; free them
  // so the process does not leak device memory.
  for (auto& [block, size] : used_) cudaFree(block);
}

void* DevicePool::allocate(size_t bytes) {
  const size_t size = round_size(bytes);
  check_injected_allocation_failure("device memory pool");
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cached_.lower_bound(size);
  if (it != cached_.end() && it->first <= size * kMaxWaste) {
    void* block = it->second;
    const size_t block_size = it->first;
    cached_.erase(it);
    used_[block] = block_size;
    stats_.cached_bytes -= int64_t(block_size);
    stats_.in_use_bytes += int64_t(block_size);
    return block;
  }
  DeviceScope scope(device_);
  void* block = nullptr;
  cudaError_t status = cudaMalloc(&block, size);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    trim_locked();
    status = cudaMalloc(&block, size);
  }
  check_cuda(status, "cudaMalloc (device memory pool)", __FILE__, __LINE__);
  ++stats_.device_allocations;
  used_[block] = size;
  stats_.in_use_bytes += int64_t(size);
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.in_use_bytes + stats_.cached_bytes);
  return block;
}

void DevicePool::release(void* block) noexcept {
  if (block == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = used_.find(block);
  if (it == used_.end()) return;
  const size_t size = it->second;
  used_.erase(it);
  cached_.emplace(size, block);
  stats_.in_use_bytes -= int64_t(size);
  stats_.cached_bytes += int64_t(size);
}

void DevicePool::zero_once(void* block, size_t bytes, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t& zeroed = zeroed_[block];
  if (zeroed >= bytes) return;
  DeviceScope scope(device_);
  QV_CUDA_CHECK(cudaMemsetAsync(block, 0, bytes, stream));
  zeroed = bytes;
}

void DevicePool::trim() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  trim_locked();
}

void DevicePool::trim_locked() noexcept {
  if (cached_.empty()) return;
  DeviceScopeNoThrow scope(device_);
  for (auto& [size, block] : cached_) {
    cudaFree(block);
    zeroed_.erase(block);
  }
  cached_.clear();
  stats_.cached_bytes = 0;
}

PoolStats DevicePool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace quiver::gpu
