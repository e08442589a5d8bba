// What the CUDA backend keeps per device (gpu.h's opaque Resources): two compute streams (GEMM of one
// tile overlaps the selection of the previous one) and a copy stream (results of one query tile go
// to the host while the next is computed), a cuBLAS handle per compute stream with its own
// workspace, a caching device memory pool, pinned staging buffers and a few events. One call uses
// it at a time (Session); calls from several threads queue on its lock.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#include "cpp/backend/gpu.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/memory_pool.h"
#include "cuda/core/transfer.h"
#include "cuda/select/select.h"

namespace quiver::gpu {

class Resources {
 public:
  static constexpr int kComputeStreams = 2;
  static constexpr int kCopyStream = 2;  // stream(kCopyStream)
  static constexpr int kStreams = 3;
  static constexpr int kEvents = 9;  // knn.cu names them

  explicit Resources(const ResourcesOptions& options);
  ~Resources();
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;

  int device() const { return device_; }
  const SelectLimits& limits() const { return limits_; }
  cudaStream_t stream(int i) const { return streams_[i]; }
  cublasHandle_t blas(int i) const { return blas_[i]; }
  cudaEvent_t event(int i) const { return events_[i]; }
  DevicePool& pool() { return pool_; }
  HostStaging& staging() { return *staging_; }
  int64_t tile_bytes() const { return tile_bytes_; }
  int64_t stream_bytes() const { return stream_bytes_; }  // ResourcesOptions::stream_bytes
  int64_t upload_chunk_bytes() const { return upload_chunk_bytes_; }  // ResourcesOptions' or its default
  std::mutex& mutex() { return mutex_; }

 private:
  void release() noexcept;

  int device_;
  int64_t tile_bytes_ = 0;
  int64_t stream_bytes_ = 0;
  int64_t upload_chunk_bytes_ = 0;
  SelectLimits limits_;
  cudaStream_t streams_[kStreams] = {};
  cublasHandle_t blas_[kComputeStreams] = {};
  void* blas_workspace_[kComputeStreams] = {};
  cudaEvent_t events_[kEvents] = {};
  DevicePool pool_;  // after device_, which it is constructed from
  HostStaging* staging_ = nullptr;
  std::mutex mutex_;
};

// One call's exclusive use of a Resources: takes the lock and makes the device current; on the way
// out waits for the streams (so the pool's blocks are free for the next call), restores the
// caller's device and unlocks. finish() is that wait with errors reported; the destructor, which
// also runs when an exception unwinds, swallows them.
class Session {
 public:
  explicit Session(Resources& resources);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Resources& resources() { return resources_; }
  void finish();

 private:
  Resources& resources_;
  std::unique_lock<std::mutex> lock_;
  DeviceScope device_;  // after lock_: the caller's device comes back before the lock is released
  bool finished_ = false;
};

}  // namespace quiver::gpu
