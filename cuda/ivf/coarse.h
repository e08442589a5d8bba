// Coarse quantization (the paper's L_IVF): for a batch of rows (queries, or vectors being added),
// the nprobe closest centroids, by one SGEMM against the centroids and the selection of cuda/select
// (the exact search's recipe of cuda/flat, on a tile holding the whole batch).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/core/resources.h"
#include "cuda/ivf/ivf_device.h"

namespace quiver::gpu {

// Floats of the distance tile and bytes of the selection workspace for `rows` rows.
int64_t coarse_tile_floats(const IvfDevice& ivf, int64_t rows);
int64_t coarse_workspace_bytes(Resources& resources, const IvfDevice& ivf, int64_t rows, int64_t nprobe);

// x: rows x dim (device, rotated space). Writes per row the nprobe closest lists (closest first,
// except nprobe = nlist: every list in list order) and their keys: ||c||^2 - 2 <x, c> for L2 (add
// ||x||^2 for the squared distance), -<x, c> for inner product. Runs on stream / handle `slot`.
void coarse_search(Resources& resources, int slot, const IvfDevice& ivf, int64_t rows, const float* x, int64_t nprobe,
                   float* tile, void* workspace, float* keys, int32_t* lists);

}  // namespace quiver::gpu
