#include "cuda/core/transfer.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "cpp/core/error.h"
#include "cuda/core/error.h"

namespace quiver::gpu {

namespace {

// Host copies at least this large are split over several threads; smaller ones cost more to hand
// out than they gain.
constexpr size_t kParallelCopyBytes = size_t(1) << 20;
// Threads of one host copy (the caller included): memory bandwidth is shared, a few saturate it.
constexpr unsigned kMaxCopyThreads = 4;
constexpr size_t kCopySliceAlign = 4096;

}  // namespace

MemoryKind memory_kind(const void* p, int device) {
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, p);
  if (status != cudaSuccess) {
    cudaGetLastError();  // an unknown pointer is host memory, not an error to keep
    return MemoryKind::host_pageable;
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      return attributes.device == device ? MemoryKind::device : MemoryKind::other_device;
    case cudaMemoryTypeManaged:
      return MemoryKind::device;
    case cudaMemoryTypeHost:
      return MemoryKind::host_pinned;
    default:
      return MemoryKind::host_pageable;
  }
}

HostStaging::HostStaging(size_t chunk_bytes) : chunk_(chunk_bytes) {
  try {
    for (int i = 0; i < 2; ++i) {
      QV_CUDA_CHECK(cudaMallocHost(&buffer_[i], chunk_));
      QV_CUDA_CHECK(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming));
    }
  } catch (...) {
    release();
    throw;
  }
}

HostStaging::~HostStaging() { release(); }

void HostStaging::release() noexcept {
  for (int i = 0; i < 2; ++i) {
    if (done_[i] != nullptr) {
      cudaEventSynchronize(done_[i]);
      cudaEventDestroy(done_[i]);
      done_[i] = nullptr;
    }
    if (buffer_[i] != nullptr) {
      cudaFreeHost(buffer_[i]);
      buffer_[i] = nullptr;
    }
  }
}

unsigned HostStaging::copy_threads(size_t bytes) {
  const unsigned threads = std::min(kMaxCopyThreads, std::max(1u, std::thread::hardware_concurrency() / 2));
  if (bytes < kParallelCopyBytes || threads < 2) return 1;
  if (!copiers_) copiers_ = std::make_unique<ThreadPool>(static_cast<int>(threads));
  return threads;
}

void HostStaging::host_copy(void* dst, const void* src, size_t bytes) {
  const unsigned threads = copy_threads(bytes);
  if (threads == 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const size_t slice = (bytes / threads + kCopySliceAlign - 1) / kCopySliceAlign * kCopySliceAlign;
  copiers_->parallel_for(threads, [&](int64_t i) {
    const size_t begin = std::min(bytes, size_t(i) * slice), end = std::min(bytes, begin + slice);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  });
}

void* HostStaging::next_buffer(int* h) {
  // Buffers alternate across calls too: a call's first chunk need not wait for the last DMA of the
  // call before (which may be queued behind other work).
  *h = static_cast<int>(next_++ & 1);
  QV_CUDA_CHECK(cudaEventSynchronize(done_[*h]));  // the previous DMA out of this buffer is done
  return buffer_[*h];
}

void HostStaging::send(int h, void* dst, size_t bytes, cudaStream_t stream) {
  QV_CUDA_CHECK(cudaMemcpyAsync(dst, buffer_[h], bytes, cudaMemcpyHostToDevice, stream));
  QV_CUDA_CHECK(cudaEventRecord(done_[h], stream));
}

void HostStaging::to_device(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  for (size_t offset = 0; offset < bytes; offset += chunk_) {
    int h = 0;
    void* buffer = next_buffer(&h);
    const size_t n = std::min(chunk_, bytes - offset);
    host_copy(buffer, in + offset, n);
    send(h, out + offset, n, stream);
  }
}

void HostStaging::gather_to_device(float* dst, const float* base, int64_t dim, const int32_t* rows, int64_t count,
                                   int32_t skip, cudaStream_t stream) {
  const size_t row_bytes = size_t(dim) * sizeof(float);
  require(row_bytes <= chunk_, "gather_to_device: a row of ", row_bytes, " bytes is larger than the staging buffer of ",
          chunk_);
  const auto per_buffer = static_cast<int64_t>(chunk_ / row_bytes);
  for (int64_t first = 0; first < count; first += per_buffer) {
    int h = 0;
    auto* buffer = static_cast<float*>(next_buffer(&h));
    const int64_t n = std::min(per_buffer, count - first);
    const auto gather = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int32_t row = rows[first + i];
        if (row != skip) std::memcpy(buffer + i * dim, base + int64_t(row) * dim, row_bytes);
      }
    };
    const unsigned threads = copy_threads(size_t(n) * row_bytes);
    if (threads == 1) {
      gather(0, n);
    } else {
      const int64_t slice = (n + threads - 1) / threads;
      copiers_->parallel_for(threads, [&](int64_t t) { gather(std::min(n, t * slice), std::min(n, (t + 1) * slice)); });
    }
    send(h, dst + first * dim, size_t(n) * row_bytes, stream);
  }
}

void HostStaging::to_host(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  const size_t chunks = (bytes + chunk_ - 1) / chunk_;
  auto issue = [&](size_t c) {
    const int h = static_cast<int>(c & 1);
    const size_t offset = c * chunk_;
    QV_CUDA_CHECK(cudaEventSynchronize(done_[h]));
    QV_CUDA_CHECK(cudaMemcpyAsync(buffer_[h], in + offset, std::min(chunk_, bytes - offset),
                                  cudaMemcpyDeviceToHost, stream));
    QV_CUDA_CHECK(cudaEventRecord(done_[h], stream));
  };
  for (size_t c = 0; c < std::min<size_t>(2, chunks); ++c) issue(c);
  for (size_t c = 0; c < chunks; ++c) {
    const int h = static_cast<int>(c & 1);
    const size_t offset = c * chunk_;
    QV_CUDA_CHECK(cudaEventSynchronize(done_[h]));
    host_copy(out + offset, buffer_[h], std::min(chunk_, bytes - offset));
    if (c + 2 < chunks) issue(c + 2);
  }
}

void copy_to_device(HostStaging& staging, int device, void* dst, const void* src, size_t bytes,
                    cudaStream_t stream) {
  if (bytes == 0) return;
  if (memory_kind(src, device) == MemoryKind::host_pageable) {
    staging.to_device(dst, src, bytes, stream);
  } else {
    QV_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
  }
}

void copy_from_device(HostStaging& staging, int device, void* dst, const void* src, size_t bytes,
                      cudaStream_t stream) {
  if (bytes == 0) return;
  if (memory_kind(dst, device) == MemoryKind::host_pageable) {
    staging.to_host(dst, src, bytes, stream);
  } else {
    QV_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    QV_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
}

void download_result_rows(HostStaging& staging, int device, cudaStream_t copy_stream, cudaEvent_t ready,
                          float* distances, int64_t* ids, const float* device_distances,
                          const int64_t* device_ids, int64_t first, int64_t rows, int64_t k) {
  QV_CUDA_CHECK(cudaStreamWaitEvent(copy_stream, ready, 0));
  const size_t values = size_t(rows * k);
  copy_from_device(staging, device, distances + first * k, device_distances + first * k, values * sizeof(float),
                   copy_stream);
  copy_from_device(staging, device, ids + first * k, device_ids + first * k, values * sizeof(int64_t), copy_stream);
}

}  // namespace quiver::gpu
