#include "cuda/core/fault_injection.h"

#include <atomic>
#include <cstdint>

#include "cpp/backend/gpu.h"
#include "cpp/core/error.h"

namespace quiver::gpu {

namespace {

// Requests left before the failing one; 0: disarmed.
std::atomic<int64_t> remaining{0};

}  // namespace

void fail_device_allocation_at(int64_t n) { remaining = n > 0 ? n : 0; }

void check_injected_allocation_failure(const char* what) {
  int64_t left = remaining.load();
  while (left > 0 && !remaining.compare_exchange_weak(left, left - 1)) {
  }
  if (left == 1) fail(Status::out_of_device_memory, "out of GPU memory (injected by a test): ", what);
}

}  // namespace quiver::gpu
