#include "cuda/ivf/query_order.h"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>

#include "cuda/core/error.h"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;

int64_t align_up(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// Bits of a list number: the sort looks at these only.
int key_bits(int64_t nlist) {
  int bits = 1;
  while (bits < 31 && (int64_t(1) << bits) < nlist) ++bits;
  return bits;
}

size_t sort_scratch_bytes(int64_t rows, int64_t nlist) {
  size_t bytes = 0;
  QV_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                                static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                                static_cast<int32_t*>(nullptr), static_cast<int>(rows), 0,
                                                key_bits(nlist)));
  return bytes;
}

__global__ void first_list_kernel(const int32_t* lists, int64_t nprobe, int64_t rows, int32_t* keys,
                                  int32_t* values) {
  const int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q >= rows) return;
  keys[q] = lists[q * nprobe];
  values[q] = static_cast<int32_t>(q);
}

}  // namespace

int64_t query_order_workspace_bytes(int64_t rows, int64_t nlist) {
  return 3 * align_up(rows * 4) + align_up(static_cast<int64_t>(sort_scratch_bytes(rows, nlist)));
}

void order_by_first_list(const int32_t* lists, int64_t nprobe, int64_t rows, int64_t nlist, void* workspace,
                         int32_t* order, cudaStream_t stream) {
  if (rows == 0) return;
  char* w = static_cast<char*>(workspace);
  auto* keys = reinterpret_cast<int32_t*>(w);
  auto* sorted_keys = reinterpret_cast<int32_t*>(w + align_up(rows * 4));
  auto* values = reinterpret_cast<int32_t*>(w + 2 * align_up(rows * 4));
  void* scratch = w + 3 * align_up(rows * 4);
  size_t scratch_bytes = sort_scratch_bytes(rows, nlist);
  first_list_kernel<<<static_cast<unsigned>((rows + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      lists, nprobe, rows, keys, values);
  QV_LAUNCH_CHECK("first_list_kernel");
  QV_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(scratch, scratch_bytes, keys, sorted_keys, values, order,
                                                static_cast<int>(rows), 0, key_bits(nlist), stream));
}

}  // namespace quiver::gpu
