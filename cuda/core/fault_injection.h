// Fault injection for tests: the n-th device allocation request from arming fails as a real
// cudaMalloc failure would (out_of_device_memory), whether the pool could have served it from its
// cache or not, so tests can walk every allocation of a call (tests/gpu/fault_injection_gpu_test).
#pragma once

namespace quiver::gpu {

// Called first by every device allocation request (the pool, device buffers, stored matrices);
// throws out_of_device_memory naming `what` when it is the armed one.
void check_injected_allocation_failure(const char* what);

}  // namespace quiver::gpu
