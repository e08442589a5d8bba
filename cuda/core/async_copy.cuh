// Asynchronous global-to-shared copies (cp.async, sm_80 and later): the bytes in flight cost no
// registers, and a kernel keeps several groups of them in flight while it computes.
#pragma once

#include <cuda_runtime.h>

namespace quiver::gpu {

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Copies 16 bytes; both addresses 16-byte aligned, the source wholly inside its allocation.
__device__ __forceinline__ void copy_slot16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(dst)), "l"(src));
}

// Copies 4 bytes (both addresses 4-byte aligned).
__device__ __forceinline__ void copy_word4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(shared_address(dst)), "l"(src));
}

// Ends the group of copies this thread started since the last commit.
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

}  // namespace quiver::gpu
