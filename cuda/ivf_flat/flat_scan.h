// IVF-Flat list scanning, list-major: the (query, probe) pairs of a query tile are grouped by list
// (a counting sort on the device, one block for small batches), then a persistent grid takes the
// (list, tile of 64 entries) units that have queries; each computes the distances of all the
// list's queries to the tile's entries as a small SIMT SGEMM (64 queries x 64 entries per step,
// 4 x 4 per thread, staged through shared memory), so each entry is read from memory once per 64
// queries instead of once per query. Small batches (at most two queries per list on average) skip
// the sort and compute each pair's distances directly. Keys go to each query's row of
// distances (row_select.h): ||y||^2 - 2 <x, y> for L2 (the caller adds ||x||^2), -<x, y> for inner
// product.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

struct FlatScanParams {
  int64_t rows = 0;
  int64_t nprobe = 0;
  const int32_t* lists = nullptr;  // rows x nprobe
  int32_t* seg = nullptr;          // rows x nprobe, workspace: each pair's segment start in its query's row
  const float* queries = nullptr;  // rows x dim (rotated space)
  int64_t dim = 0;
  int64_t nlist = 0;
  int64_t max_list_size = 0;
  const int32_t* list_offset = nullptr;
  const int32_t* list_size = nullptr;
  const float* vectors = nullptr;  // arena: dim floats per slot
  const float* norms = nullptr;    // arena: per slot (L2)
  bool l2 = true;
  float* dist = nullptr;
  int64_t row_stride = 0;
  int sm_count = 1;
};

int64_t flat_scan_workspace_bytes(int64_t rows, int64_t nprobe, int64_t nlist);

void flat_scan(const FlatScanParams& p, void* workspace, cudaStream_t stream);

}  // namespace quiver::gpu
