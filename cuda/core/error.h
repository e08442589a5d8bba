// Every CUDA runtime and cuBLAS call, and every kernel launch, goes through these checks. A failure
// becomes a quiver::Error: out_of_device_memory for an allocation failure (the caller's index stays
// intact), cuda_error with the CUDA message for anything else.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace quiver::gpu {

// Throws for anything but cudaSuccess; `what` names the call, file:line where it was made.
void check_cuda(cudaError_t status, const char* what, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* what, const char* file, int line);

}  // namespace quiver::gpu

#define QV_CUDA_CHECK(call) ::quiver::gpu::check_cuda((call), #call, __FILE__, __LINE__)
#define QV_CUBLAS_CHECK(call) ::quiver::gpu::check_cublas((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: configuration errors (too many threads, too much shared memory) show here;
// faults during the kernel show at the next synchronising call, which is checked too.
#define QV_LAUNCH_CHECK(kernel_name) \
  ::quiver::gpu::check_cuda(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
