// The per-query sort of the GPU range search's hits (range_search.cu): a segmented sort of 64-bit
// keys (range_kernels.h's scatter), on its own in this file because it instantiates CUB's kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace quiver::gpu {

// Workspace bytes of range_sort for `items` keys in `segments` segments.
size_t range_sort_workspace_bytes(int64_t items, int64_t segments);

// keys_out = keys_in sorted ascending within each segment s, [offsets[s], offsets[s + 1]) (segments
// + 1 offsets, the last equal to items). Device memory; workspace of range_sort_workspace_bytes.
void range_sort(void* workspace, size_t workspace_bytes, const uint64_t* keys_in, uint64_t* keys_out, int64_t items,
                int64_t segments, const int64_t* offsets, cudaStream_t stream);

}  // namespace quiver::gpu
