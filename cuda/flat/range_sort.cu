// range_sort.h: CUB's segmented sort (short segments sorted by a warp or a block, long ones by
// radix passes), keys only: each key holds the distance and the row (range_kernels.h).
#include "cuda/flat/range_sort.h"

#include <cub/device/device_segmented_sort.cuh>

#include "cuda/core/error.h"

namespace quiver::gpu {

size_t range_sort_workspace_bytes(int64_t items, int64_t segments) {
  size_t bytes = 0;
  QV_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(nullptr, bytes, static_cast<const uint64_t*>(nullptr),
                                                   static_cast<uint64_t*>(nullptr), items, segments,
                                                   static_cast<const int64_t*>(nullptr),
                                                   static_cast<const int64_t*>(nullptr)));
  return bytes;
}

void range_sort(void* workspace, size_t workspace_bytes, const uint64_t* keys_in, uint64_t* keys_out, int64_t items,
                int64_t segments, const int64_t* offsets, cudaStream_t stream) {
  if (items == 0 || segments == 0) return;
  size_t bytes = workspace_bytes;
  QV_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(workspace, bytes, keys_in, keys_out, items, segments, offsets,
                                                   offsets + 1, stream));
}

}  // namespace quiver::gpu
