// What the engine knows of the GPU exact range search (cuda/flat/range_search.cu): every base row
// within a radius of each query, the same rows and distances as the CPU's exact_range
// (cpp/exact/range.h) evaluated in float32 the way the GPU exact search evaluates them.
//
// How: TF32 tensor-core products (or SGEMM for small batches and for L2 data whose TF32 error bound
// is wide next to the radius) give approximate distances. The rows whose approximate distance lies
// within the radius plus a rigorous bound on the products' error (the bound of cuda/flat/certify.h)
// are candidates: TF32 products are filtered in the kernel that computes them where dim is a
// multiple of 4 up to 128, others through distance tiles a GEMM writes and a kernel reads once. The
// candidates' exact float32 distances (gpu.h's ComputeMode: the sum over i in order of
// (x_i - y_i)^2 with fused multiply-adds, or of x_i y_i) decide which meet the radius. Per query the
// hits are then sorted on the device (distance, then row) and copied to the host, query block by
// query block, the copy of one block overlapping the search of the next. Device memory: two
// distance tiles (ResourcesOptions::tile_bytes; none where the products are filtered in their
// kernel) and about 44 bytes per hit of the largest query block, whatever the radius; a block whose
// hits do not fit what the device can hold is searched again in smaller parts.
//
// Errors as in gpu.h (a build without CUDA: unsupported). Blocks until the results are on the host;
// keeps no caller pointer.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/result_memory.h"
#include "cpp/core/metric.h"

namespace quiver::gpu {

// Range search results by row, CSR: query q's hits are rows[lims[q] .. lims[q + 1]) with their
// distances, closest first (L2: ascending; similarities: descending), ties to the smaller row.
// Host memory.
struct RangeHits {
  std::vector<int64_t> lims;  // nq + 1
  ResultVector<int64_t> rows;
  ResultVector<float> distances;
};

// Every row within `radius` of each of nq queries.
//
// metric       L2: rows whose exact float32 squared distance is <= radius (a negative radius finds
//              nothing); inner product and cosine: rows whose exact float32 product is >= radius
//              (cosine: the caller passes normalised rows and queries, as for knn).
// base         n x dim floats, row-major, device memory (an index's DeviceMatrix) or host memory
//              (copied to the device for the call). n below 2^31 - 1.
// base_norms   the n rows' squared norms to float accuracy (as knn takes them; device or host
//              memory), or nullptr to have them computed.
// queries      nq x dim floats, host or device memory; finite.
// radius       not NaN, in the metric's own units (squared for L2).
// filter       rows that may be returned (gpu.h's RowFilter, host memory).
// max_results  the most hits one query may have, 0 for no limit: a query with more fails the call
//              with too_many_results naming the query and the limit (nothing is returned).
// Distances are the exact float32 values (as knn's); non-finite inputs give unspecified results.
RangeHits range_search(Resources& resources, Metric metric, const float* base, const float* base_norms,
                       int64_t n, int64_t dim, const float* queries, int64_t nq, float radius,
                       const RowFilter& filter = RowFilter{}, int64_t max_results = 0);

}  // namespace quiver::gpu
