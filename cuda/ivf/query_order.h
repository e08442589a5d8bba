// An order of a batch's queries by their closest probed list, for scans that run one block per
// query (IVF-PQ): blocks resident at the same time then probe mostly the same lists, so a list's
// codes are read from device memory once and from L2 by the other queries (a 1M-entry PQ64 index's
// codes, 64 MB, do not fit in L2 whole).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

// Device bytes order_by_first_list needs for `rows` queries (keys, values and the sort's scratch).
int64_t query_order_workspace_bytes(int64_t rows, int64_t nlist);

// order (rows): the queries sorted by lists[q * nprobe] (their closest list), stable.
void order_by_first_list(const int32_t* lists, int64_t nprobe, int64_t rows, int64_t nlist, void* workspace,
                         int32_t* order, cudaStream_t stream);

}  // namespace quiver::gpu
