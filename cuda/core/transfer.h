// Moving caller arrays between host and device. Callers may pass host or device pointers anywhere
// (DESIGN.md); these find out which and copy the fastest way: device memory of the call's device is
// used in place, pinned host memory and other devices' memory are copied by DMA, pageable host
// memory goes through a pair of pinned staging buffers so the host copy of one chunk overlaps the
// DMA of the next.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cpp/core/thread_pool.h"

namespace quiver::gpu {

enum class MemoryKind {
  host_pageable,  // ordinary host memory (or a pointer CUDA does not know)
  host_pinned,    // cudaMallocHost / cudaHostRegister memory
  device,         // device memory of the given device, or managed memory: usable by its kernels
  other_device,   // device memory of another device
};

MemoryKind memory_kind(const void* p, int device);

// Two pinned buffers of chunk_bytes each, reused by every transfer of a Resources. The copies
// between pageable memory and a pinned buffer run on a few threads when a chunk is large: one
// thread's memcpy (about 7 GB/s measured on the H100 host) is slower than the DMA it feeds.
class HostStaging {
 public:
  explicit HostStaging(size_t chunk_bytes);
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Host (pageable) -> device, ordered on `stream`. Returns once `src` has been read; the last DMA
  // may still be in flight on the stream.
  void to_device(void* dst, const void* src, size_t bytes, cudaStream_t stream);
  // Device -> host (pageable), after the work already queued on `stream`. Returns once `dst` is
  // written.
  void to_host(void* dst, const void* src, size_t bytes, cudaStream_t stream);
  // dst (count x dim floats, device memory) row i = host row rows[i] of base (dim floats each), ordered
  // on `stream`; rows equal to `skip` are left unwritten. Gathered into the pinned buffers on the
  // copy threads. Returns once the host rows have been read.
  void gather_to_device(float* dst, const float* base, int64_t dim, const int32_t* rows, int64_t count,
                        int32_t skip, cudaStream_t stream);

 private:
  void release() noexcept;
  // The copy threads for `bytes` of host copying (1: the caller alone); started on first use.
  unsigned copy_threads(size_t bytes);
  // memcpy between host buffers, split over copiers_ when large.
  void host_copy(void* dst, const void* src, size_t bytes);
  // Waits until pinned buffer h's last DMA is done and returns it for the next one.
  void* next_buffer(int* h);
  // DMA of `bytes` from buffer h to dst on `stream`, then its event.
  void send(int h, void* dst, size_t bytes, cudaStream_t stream);

  size_t chunk_;
  void* buffer_[2] = {nullptr, nullptr};
  cudaEvent_t done_[2] = {nullptr, nullptr};
  unsigned next_ = 0;  // the buffer to_device fills next
  std::unique_ptr<ThreadPool> copiers_;
};

// Copies any kind of memory into device memory `dst`, ordered on `stream` (returns after the source
// has been read or its copy queued).
void copy_to_device(HostStaging& staging, int device, void* dst, const void* src, size_t bytes,
                    cudaStream_t stream);
// Copies device memory `src` to any kind of memory `dst` after the work queued on `stream`; returns
// once dst is written.
void copy_from_device(HostStaging& staging, int device, void* dst, const void* src, size_t bytes,
                      cudaStream_t stream);

// Rows [first, first + rows) of a k-wide result (distances and ids) from device memory to the
// caller's arrays (any memory), on `copy_stream` once `ready` has fired: a query tile's results
// leave while the tiles after it compute. Returns once they are written.
void download_result_rows(HostStaging& staging, int device, cudaStream_t copy_stream, cudaEvent_t ready,
                          float* distances, int64_t* ids, const float* device_distances,
                          const int64_t* device_ids, int64_t first, int64_t rows, int64_t k);

}  // namespace quiver::gpu
