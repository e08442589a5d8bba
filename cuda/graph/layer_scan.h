// Where a small batch's walks start: the best rows of the graph's entry layer found by reading every
// layer row, instead of walking the layer.
//
// Why: a walk is a chain of dependent expansions. Reading the 4 096 layer rows once, spread over the
// whole device (a warp a row, a block per 32 rows per query) and merged by warps, costs about 6 us
// (128 floats a row) to 9 us (Fashion-MNIST's 784: 12.8 MB of layer a query) plus a 6.5 us merge
// (ncu, H200), and its starts are the layer's exact best rather than a walk's. H200, batch 1 at
// recall@10 0.95 (song_bench.py, 2026-11-28): synthetic 1M x 128 0.160 ms walked -> 0.092-0.108 ms,
// Fashion-MNIST 0.142 -> 0.090-0.107 ms (the range: three hosts). Batches reading more than
// kMaxLayerScanQueryFloats query floats' worth walk the layer: the walk reads far less than nq x
// layer rows.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/core/memory_pool.h"
#include "cuda/core/resources.h"
#include "cuda/graph/graph_device.h"

namespace quiver::gpu {

// The most starts a query takes from the layer here (the walk takes more).
constexpr int64_t kMaxLayerScanStarts = 8;
// Batches of nq x dim up to this scan the layer (32 queries of 128 floats, 5 of 784).
constexpr int64_t kMaxLayerScanQueryFloats = 4096;

// Whether a batch of nq queries scans `layer` for `starts` rows a query (else it walks it): a layer
// of vectors (a hashed layer holds codes), a small batch, few starts.
inline bool layer_scan_applies(const GraphDevice& layer, int64_t starts, int64_t nq) {
  return layer.codes.size() == 0 && nq * layer.dim <= kMaxLayerScanQueryFloats && starts <= kMaxLayerScanStarts;
}

// For each of nq queries (device, nq x layer.dim floats), the `starts` layer rows closest to it by
// the layer's metric (L2, or the largest inner product), ties to the smaller row, written as rows
// of the graph (the layer's ids) to out (device, nq x starts; -1 past the layer's rows). Queued on
// `stream`; its scratch comes from `pool` (handed back in stream order).
void scan_layer(const GraphDevice& layer, int64_t starts, int64_t nq, const float* queries, int64_t* out,
                DevicePool& pool, cudaStream_t stream);

}  // namespace quiver::gpu
