// Device discovery for the engine (cpp/backend/gpu.h).
#include <cuda_runtime.h>

#include <string>

#include "cpp/backend/gpu.h"

namespace quiver::gpu {

namespace {

// Asked once: the answer cannot change within a process, and the query is slow without a driver.
struct Discovery {
  int count = 0;
  std::string reason;
  Discovery() {
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      count = 0;
      reason = std::string("no CUDA device is usable (") + cudaGetErrorString(status) + ")";
      cudaGetLastError();  // clear the sticky-free error so later calls start clean
    } else if (count == 0) {
      reason = "no CUDA device is present";
    }
  }
};

const Discovery& discovery() {
  static const Discovery instance;
  return instance;
}

}  // namespace

int device_count() { return discovery().count; }

std::string unavailable_reason() { return discovery().reason; }

}  // namespace quiver::gpu
