// Memory questions and copies the engine asks of the backend (cpp/backend/gpu.h).
#include <cuda_runtime.h>

#include "cpp/backend/gpu.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"

namespace quiver::gpu {

bool is_device_pointer(const void* p) {
  if (p == nullptr || device_count() == 0) return false;
  cudaPointerAttributes attributes;
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // an unknown pointer is host memory; clear the error it leaves
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice;
}

void copy_memory(Resources& resources, void* dst, const void* src, int64_t bytes) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  if (bytes <= 0) return;
  Session session(resources);
  // cudaMemcpyDefault: the runtime finds each side's kind (unified addressing).
  QV_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, resources.stream(0)));
  session.finish();
}

}  // namespace quiver::gpu
