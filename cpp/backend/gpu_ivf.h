// Inverted-file indexes (IVF-Flat, IVF-PQ) on the device: what the engine knows of the CUDA
// backend's part of them. Implemented in cuda/ivf/ when quiver is built with CUDA and by
// backend/no_gpu.cpp otherwise. Conventions (errors, host or device pointers, blocking) are those of
// backend/gpu.h.
//
// The engine trains the model (coarse centroids, optional OPQ rotation, PQ codebooks; see
// cpp/index/ivf_model.h) and hands it to ivf_create; the backend keeps a device copy of it and the
// inverted lists, encodes added vectors on the device and searches there.
//
// Vectors given to ivf_add and queries given to ivf_search are in the caller's space (not rotated;
// for cosine already normalised by the engine). Ids are the index's 64-bit ids.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/compute_mode.h"
#include "cpp/core/result_memory.h"
#include "cpp/core/metric.h"

namespace quiver::gpu {

// A trained IVF model in host memory; ivf_create copies what it needs.
struct IvfModelView {
  Metric metric = Metric::l2;  // l2 or inner_product (cosine arrives as inner_product on unit vectors)
  // (The metric also drives coarse quantization, as on the CPU (cpp/index/ivf_model.h): an added
  // vector joins its nearest centroid (l2) or the one of largest inner product, and a search probes
  // the nprobe best centroids by the same measure.)
  int64_t dim = 0;
  int64_t nlist = 0;
  const float* centroids = nullptr;  // nlist x dim, in the rotated space when rotation != nullptr
  // OPQ: dim x dim row-major orthogonal R; a vector x is used as R x (rotated) for coarse assignment
  // and PQ encoding; nullptr: no rotation.
  const float* rotation = nullptr;
  // 0: IVF-Flat (each entry stores its dim floats, rotated when rotation != nullptr).
  // Else IVF-PQ: pq_m sub-quantizers of 256 centroids over dim / pq_m dimensions each, encoding the
  // residual (R x - centroid of its list), one byte per sub-quantizer.
  int64_t pq_m = 0;
  const float* pq_codebooks = nullptr;  // pq_m x 256 x (dim / pq_m)
  // Also store every entry's raw vector (dim floats, caller space) for exact re-ranking (",Refine").
  bool keep_raw = false;
  // Keep the ids in host memory only (saves 8 bytes a vector of device memory; results are translated
  // on the host).
  bool ids_on_host = false;
};

class IvfDevice;

IvfDevice* ivf_create(Resources& resources, const IvfModelView& model);
// nullptr: no-op. No call using it may be running.
void ivf_free(IvfDevice* ivf) noexcept;
struct IvfDeviceDeleter {
  void operator()(IvfDevice* ivf) const noexcept { ivf_free(ivf); }
};
using IvfDevicePtr = std::unique_ptr<IvfDevice, IvfDeviceDeleter>;
inline IvfDevicePtr make_ivf(Resources& resources, const IvfModelView& model) {
  return IvfDevicePtr(ivf_create(resources, model));
}

// Bytes of one entry's code: dim * 4 (IVF-Flat) or pq_m (IVF-PQ).
int64_t ivf_code_bytes(const IvfDevice& ivf);

// Encodes n vectors x (n x dim, host or device) on the device (rotation, nearest centroid, PQ codes
// of the residuals) and appends them with their ids (host memory, checked by the engine: new and
// unique). All or nothing: on any error the lists are unchanged. lists_out: nullptr, or n entries
// (host) receiving each vector's list.
void ivf_add(Resources& resources, IvfDevice& ivf, int64_t n, const float* x, const int64_t* ids,
             int64_t* lists_out);

// Appends already encoded entries to one list (loading a saved index, moving one between devices):
// codes n x ivf_code_bytes, raw n x dim floats (required when keep_raw, else ignored), ids n; all
// host memory. All or nothing.
void ivf_append_encoded(Resources& resources, IvfDevice& ivf, int64_t list, int64_t n,
                        const uint8_t* codes, const float* raw, const int64_t* ids);

// Removes the entries whose ids are among the n given (host memory; ids not present are ignored).
// Returns how many were removed. Remaining entries keep their order within each list. All or nothing.
int64_t ivf_remove(Resources& resources, IvfDevice& ivf, int64_t n, const int64_t* ids);

int64_t ivf_count(const IvfDevice& ivf);
int64_t ivf_list_size(const IvfDevice& ivf, int64_t list);
// Copies one list to host memory: codes (size x code_bytes), raw (size x dim floats; only when
// keep_raw, else pass nullptr) and ids (size). Any of them may be nullptr to skip it.
void ivf_list_read(Resources& resources, const IvfDevice& ivf, int64_t list, uint8_t* codes,
                   float* raw, int64_t* ids);

struct IvfMemory {
  int64_t device_bytes = 0;
  int64_t host_bytes = 0;
};
IvfMemory ivf_memory(const IvfDevice& ivf);

struct IvfSearchOptions {
  int64_t nprobe = 1;  // 1 .. nlist (checked by the engine)
  // Allowed ids (bitset over ids, host memory), as IdFilter in cpp/select/topk.h; applied inside
  // the scan, so k results are returned whenever k allowed entries are in the probed lists.
  const uint8_t* filter_bits = nullptr;
  int64_t filter_nbits = 0;
  // IVF-PQ look-up tables: fp32 (default) keeps them in float32; fp16 (also bf16) stores them in
  // half precision, scaled so they cannot overflow; tf32 is treated as fp32. IVF-Flat: fp32 scans in
  // float32; other modes may use the tensor cores with an exact float32 re-ranking.
  ComputeMode mode = ComputeMode::fp32;
  // keep_raw models only: when > 0, the refine_k best entries by approximate distance (refine_k >=
  // k) are re-ranked with exact float32 distances to their raw vectors; 0: no re-ranking.
  int64_t refine_k = 0;
  // Called as the results of query rows [0, rows) are in the outputs (SearchOptions::rows_done):
  // after each query tile when results go to device memory with device ids or are copied out a tile
  // at a time; otherwise never (every row is final when the search returns). May be empty.
  std::function<void(int64_t rows)> rows_done;
  // Host queries not checked yet (SearchOptions::check_rows): called for every row, a query tile
  // at a time once the tile's work is queued, so the host's check runs beside the device; it throws
  // for a bad row, and the search then ends with that error. May be empty.
  std::function<void(int64_t begin, int64_t end)> check_rows;
};

// The k nearest entries of nq queries (nq x dim, host or device) in the nprobe closest lists of each.
// distances, ids: nq x k (host or device), closest first (L2: squared distance, smaller first; inner
// product: larger first); where fewer than k entries are found, ids are -1 and distances +inf (L2)
// or -inf (inner product). k: 1 .. 2048.
void ivf_search(Resources& resources, const IvfDevice& ivf, int64_t nq, const float* queries,
                int64_t k, const IvfSearchOptions& options, float* distances, int64_t* ids);

// Range search results by id, CSR (host memory): query q's hits are ids[lims[q] .. lims[q + 1]) with
// their distances, closest first (L2: ascending; inner product: descending), ties to the smaller id.
struct IvfRangeHits {
  std::vector<int64_t> lims;  // nq + 1
  ResultVector<int64_t> ids;
  ResultVector<float> distances;
};

// Every entry of the nprobe closest lists of each of nq queries (nq x dim, host or device; caller
// space, as ivf_search) within `radius`: L2, squared distance <= radius (a negative radius finds
// nothing); inner product, similarity >= radius. The lists probed are those ivf_search probes (same
// coarse quantization). Distances, in float32:
//   IVF-Flat         exact, to the stored vector (rotated space with OPQ): the sum over i in order
//                    of (x_i - y_i)^2, or of x_i y_i, each lane of a warp summing every 32nd term and
//                    the lanes' sums added by a butterfly;
//   IVF-PQ keep_raw  the same, to the raw vector in the caller's space (",Refine");
//   IVF-PQ           the same, to the decoded vector (list centroid + PQ reconstruction of the
//                    residual), which is what the look-up tables sum to.
// The CPU (cpp/index/ivf_range.h) sums in another order (SIMD lanes; PQ by tables), so its hits are
// the same except entries within float rounding of the radius, and distances agree to rounding.
// options: nprobe and the filter as for ivf_search (mode and refine_k ignored). max_results: the
// most hits one query may have, 0 for no limit; a query with more fails the call with
// too_many_results naming the query and the limit, checked once the query's hits are counted on
// the device, before any are stored.
// How: per tile of queries, the coarse quantization of ivf_search, a kernel counting each query's
// hits (a warp per entry), then blocks of queries whose hits fit a bounded buffer are scanned again
// to store them as (distance, slot) keys, sorted per query on the device and copied to the host, so
// device memory stays bounded whatever the radius (about 24 bytes per hit of a block, a block
// holding at least one query). Blocks until the results are on the host; keeps no caller pointer.
IvfRangeHits ivf_range_search(Resources& resources, const IvfDevice& ivf, int64_t nq, const float* queries,
                              float radius, const IvfSearchOptions& options, int64_t max_results);

}  // namespace quiver::gpu
