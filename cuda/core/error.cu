#include "cuda/core/error.h"

#include <string>

#include "cpp/core/error.h"

namespace quiver::gpu {

namespace {

std::string where(const char* what, const char* file, int line) {
  std::string path(file);
  const size_t cut = path.rfind("cuda/");  // repository-relative, not the build machine's path
  if (cut != std::string::npos) path = path.substr(cut);
  return std::string(what) + " at " + path + ":" + std::to_string(line);
}

}  // namespace

void check_cuda(cudaError_t status, const char* what, const char* file, int line) {
  if (status == cudaSuccess) return;
  // Allocation failures are not sticky; clear the runtime's last error so later calls start clean.
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    fail(Status::out_of_device_memory, "out of GPU memory: ", where(what, file, line));
  }
  fail(Status::cuda_error, "CUDA error ", cudaGetErrorName(status), " (", cudaGetErrorString(status),
       ") in ", where(what, file, line));
}

void check_cublas(cublasStatus_t status, const char* what, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  if (status == CUBLAS_STATUS_ALLOC_FAILED)
    fail(Status::out_of_device_memory, "out of GPU memory in cuBLAS: ", where(what, file, line));
  fail(Status::cuda_error, "cuBLAS error ", cublasGetStatusName(status), " (",
       cublasGetStatusString(status), ") in ", where(what, file, line));
}

}  // namespace quiver::gpu
