// What the engine knows of the CUDA backend. Implemented in cuda/ when quiver is built with CUDA,
// and by backend/no_gpu.cpp otherwise, so the engine has no #ifdef of its own. No CUDA type appears
// here: the engine holds the backend's objects through opaque pointers.
//
// Errors are quiver::Error (cpp/core/error.h): invalid_argument for bad arguments, no_device when no
// GPU is usable, out_of_device_memory when the device cannot hold the work (nothing the call was
// asked to modify is modified then), cuda_error with CUDA's message for anything else, unsupported
// from every function but device_count() and unavailable_reason() in a build without CUDA.
//
// Pointers to vectors and results may be host or device memory (of the Resources' device); each
// call finds out which. Every call blocks until its outputs are written and keeps no caller pointer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cpp/cluster/kmeans.h"
#include "cpp/core/compute_mode.h"
#include "cpp/core/metric.h"

namespace quiver::gpu {

// Usable CUDA devices; 0 when the build has no CUDA, no driver is loaded or no GPU is present.
int device_count();

// Why device_count() is 0, in words for an error message.
std::string unavailable_reason();

// True when p points into a CUDA device's memory (not host memory, pinned or pageable, nor managed
// memory, which the host can read). Always false in a build without CUDA.
bool is_device_pointer(const void* p);

// ---- resources -----------------------------------------------------------------------------------

struct ResourcesOptions {
  int32_t device = 0;
  // Bytes of one GEMM distance tile (two are in use while searching); 0: 1 GiB, or 1/32 of the
  // device's memory if that is less. Smaller values (at least 64 KiB) trade speed for memory.
  int64_t tile_bytes = 0;
  // Bytes of each of the two pinned host buffers that stage host <-> device copies; 0: 8 MiB.
  int64_t staging_bytes = 0;
  // knn with a base in host memory (pageable or pinned): when the base's bytes exceed this budget,
  // the base is streamed through two device chunk buffers (together about this many bytes, at least
  // one distance tile's worth of rows each) instead of copied whole, the copy of the next chunk
  // overlapped with the search of the current one; results are identical. 0: a quarter of the
  // device's free memory at call time. Lets a database larger than the GPU be searched.
  int64_t stream_bytes = 0;
  // knn with a base in host memory within stream_bytes: the base's device copy is made in chunks of
  // about this many bytes (whole distance tiles), and the search of each chunk starts once it is
  // there instead of after the whole copy; results are identical. 0: 64 MiB.
  int64_t upload_chunk_bytes = 0;
};

// A device's streams, cuBLAS handles, device memory pool and pinned staging buffers; a context owns
// one per device it uses. Thread-safe: calls on one Resources from several threads run one at a
// time. Device memory taken by a call stays cached in the pool for the next one, so a repeated
// search allocates no device memory after the first.
class Resources;

Resources* create_resources(const ResourcesOptions& options);
// nullptr: no-op. Frees everything the Resources holds; no call on it may be running.
void destroy_resources(Resources* resources) noexcept;

struct ResourcesDeleter {
  void operator()(Resources* resources) const noexcept { destroy_resources(resources); }
};
using ResourcesPtr = std::unique_ptr<Resources, ResourcesDeleter>;
inline ResourcesPtr make_resources(const ResourcesOptions& options = {}) {
  return ResourcesPtr(create_resources(options));
}

struct DeviceMemoryStats {
  int64_t in_use_bytes = 0;        // held by calls in progress
  int64_t cached_bytes = 0;        // kept for later calls
  int64_t peak_bytes = 0;          // most in use plus cached
  int64_t device_allocations = 0;  // cudaMalloc calls made by the pool so far
};
DeviceMemoryStats memory_stats(Resources& resources);
// Returns the pool's cached device memory to the driver.
void release_cached_memory(Resources& resources);

// Copies bytes between any two of host and device memory (either side may be either), blocking.
void copy_memory(Resources& resources, void* dst, const void* src, int64_t bytes);

// Testing: the n-th device allocation request from now (any Resources, any thread) fails with
// out_of_device_memory; n <= 0 disarms. Lets tests reach every out-of-memory path of a call.
void fail_device_allocation_at(int64_t n);

// ---- vectors kept on the device --------------------------------------------------------------------

// The stored vectors of a GPU index: rows x dim floats, row-major, and each row's squared L2 norm,
// in device memory of the Resources' device. Not thread-safe for modification: appends and removals
// need exclusive access, as an index's add and remove do.
class DeviceMatrix;

DeviceMatrix* matrix_create(Resources& resources, int64_t dim);
// nullptr: no-op. No call using the matrix may be running.
void matrix_free(DeviceMatrix* matrix) noexcept;

struct DeviceMatrixDeleter {
  void operator()(DeviceMatrix* matrix) const noexcept { matrix_free(matrix); }
};
using DeviceMatrixPtr = std::unique_ptr<DeviceMatrix, DeviceMatrixDeleter>;
inline DeviceMatrixPtr make_matrix(Resources& resources, int64_t dim) {
  return DeviceMatrixPtr(matrix_create(resources, dim));
}

// Appends n rows (host or device memory, n x dim floats) and their norms. All or nothing: on
// out_of_device_memory the matrix is unchanged. Capacity grows geometrically.
void matrix_append(Resources& resources, DeviceMatrix& matrix, int64_t n, const float* x);
// Removes `count` rows given by their row numbers (sorted ascending, distinct, each < rows); the
// remaining rows keep their order. All or nothing.
void matrix_remove_rows(Resources& resources, DeviceMatrix& matrix, int64_t count, const int64_t* rows);
// Copies rows [first, first + n) to out (host or device memory, n x dim floats).
void matrix_read(Resources& resources, const DeviceMatrix& matrix, int64_t first, int64_t n, float* out);

int64_t matrix_rows(const DeviceMatrix& matrix);
int64_t matrix_dim(const DeviceMatrix& matrix);
// Device pointers, valid until the next append or removal; nullptr while the matrix is empty.
const float* matrix_data(const DeviceMatrix& matrix);
const float* matrix_norms(const DeviceMatrix& matrix);
// Device memory held (capacity, not only rows).
int64_t matrix_device_bytes(const DeviceMatrix& matrix);

// ---- ids on the device -------------------------------------------------------------------------------

// An index's row -> id table (n ids) copied to device memory of the Resources' device, so that
// results written to device memory get their ids there. Immutable: an index makes a new one after
// it changes.
class IdTable;
IdTable* id_table_create(Resources& resources, int64_t n, const int64_t* ids);
// nullptr: no-op. No call using the table may be running.
void id_table_free(IdTable* table) noexcept;

struct IdTableDeleter {
  void operator()(IdTable* table) const noexcept { id_table_free(table); }
};
using IdTablePtr = std::unique_ptr<IdTable, IdTableDeleter>;
inline IdTablePtr make_id_table(Resources& resources, int64_t n, const int64_t* ids) {
  return IdTablePtr(id_table_create(resources, n, ids));
}
int64_t id_table_bytes(const IdTable& table);

// rows (n row numbers, any memory; -1 for no result) replaced in place by the table's ids; rows
// outside the table become -1.
void rows_to_ids(Resources& resources, const IdTable& table, int64_t n, int64_t* rows);

// ---- exact k-NN ---------------------------------------------------------------------------------

// Which rows may be returned: bit (row % 8) of bits[row / 8] set, in host memory; rows at or beyond
// nbits are excluded. bits == nullptr allows every row.
struct RowFilter {
  const uint8_t* bits = nullptr;
  int64_t nbits = 0;
};

// How knn computes distances. Every mode returns, for its result rows, the exact float32 distance:
// the sum over i = 0 .. dim-1, in that order, of (x_i - y_i)^2 (one float subtraction and one fused
// multiply-add per term; L2), or of x_i y_i (inner product, cosine), computed directly from the
// float inputs (not as ||x||^2 + ||y||^2 - 2<x, y>). The modes differ in how rows are found:
//   fp32  the default: the exact result, the k rows of smallest exact distance (largest for
//         similarities), ties to the smaller row, exactly as ranking every row by that sum would
//         give. A fast GEMM finds candidates: TF32 tensor cores on the float inputs (SGEMM below 32
//         queries), k plus a quarter more (at least 16 more) per query, re-ranked by exact distance.
//         A certificate (cuda/flat/certify.h) proves per query that no other row can be closer: it
//         bounds the GEMM's error by the rows' TF32 rounding residuals and norms (assuming, as
//         measurements of Hopper's tensor cores show, sums at least as precise as float's with
//         truncation, with a 4x margin) and checks the bound against the gap between the k-th exact
//         distance and the approximate distance of the last candidate. Queries it cannot prove (data with large
//         offsets next to their spread, near-duplicates, many exact ties) are searched again with
//         SGEMM and the same certificate, then, if still unproven, by exact distances to every row:
//         slower, never different. k above 1639 leaves no room for candidates in the selection
//         (2048): every query is then answered from exact distances to every row (a direct-distance
//         kernel on the CUDA cores, slower than an SGEMM search).
//         base_norms, when given, must be the rows' squared norms to float accuracy (relative
//         error within dim * 2^-23): the certificate trusts them.
//   tf32  TF32 tensor cores on the float32 data (10-bit mantissas, float32 accumulation): cuBLAS
//         (CUBLAS_COMPUTE_32F_FAST_TF32, inputs rounded), or from 256 queries on, with dim a multiple
//         of 4 up to 128, a base on the device and at most 32 candidates, one kernel that selects
//         the candidates as it multiplies (cuda/flat/tf32_select.h; inputs truncated). The fp32
//         mode's TF32 pass runs the same way, up to 64 candidates (k <= 48): the kernel's splits
//         of the base keep 32 each, and the certificate also bounds the rows a full split dropped.
//   fp16  base and queries converted to IEEE half for each call (also a device-resident base or a
//         DeviceMatrix's rows: 2 bytes a value of pooled device memory; about 0.2 ms for 1M x 128
//         on an H200), products on the tensor cores with float32 accumulation. Half holds magnitudes
//         up to 65504: a finite base or query value that rounds beyond it makes knn throw
//         invalid_argument, naming the array (nothing is scaled; bf16 and tf32 take such data).
//         Magnitudes below about 6e-5 lose precision (subnormals), which the re-ranking below
//         absorbs unless most of the data is that small. Integers up to 2048 in magnitude (raw
//         pixels 0..255) are exact. The approximate distances go through device memory as half
//         values too (float32 accumulation, the products scaled by a power of two chosen from the
//         largest magnitudes so they stay within half's range: -2 <x, y> of pixels reaches 1e8);
//         a base streamed from host memory (above stream_bytes) uses float distances instead.
//   bf16  as fp16 with bfloat16: the float32 range, 8-bit mantissas; never refused. Its
//         approximate distances are bfloat16 values (8-bit mantissas), streamed base included.
// The fast modes (tf32, fp16, bf16) select an enlarged candidate set per query,
// knn_candidate_count(k) rows (tf32: tf32_candidate_count(k)), by the approximate distances, then
// re-rank the candidates by exact distance, closest first, ties to the smaller row, without a
// certificate: a true neighbour is missed where its approximate rank falls beyond the candidate set
// (recall@k against fp32: bench/gpu/NOTES.md).
using ComputeMode = quiver::ComputeMode;  // cpp/core/compute_mode.h

// The candidates a fast mode re-ranks for k: the k-selection's queue size (a power of two from 32
// to 2048) that holds max(2k, k + 16), at most 2048; so k above 1024 gets fewer than 2k and
// k = 2048 none extra (its recall may then fall below the fp32 result's). Throws invalid_argument
// for k outside 1 .. 2048.
int64_t knn_candidate_count(int64_t k);

// The tf32 mode's candidates: max(2k, k + 16) itself where the fused TF32 kernel takes it (up to
// 32: there a rounded-up set only loosens the kernel's limit and lets more keys in, at a cost), else
// knn_candidate_count(k).
int64_t tf32_candidate_count(int64_t k);

// Exact k nearest neighbours of nq queries among n base rows (dim floats each), by GEMMs on cuBLAS,
// a fused k-selection and an exact re-rank (see ComputeMode).
//
// metric      L2 (squared distances, smaller is closer), inner product or cosine (larger is closer;
//             for cosine the caller passes normalised base rows and queries).
// base        n x dim, host or device memory; host memory is copied to the device for the call,
//             the search starting on each chunk of the copy as it arrives (an index keeps its rows
//             on the device: see DeviceMatrix), or, beyond
//             ResourcesOptions::stream_bytes, streamed through the device in chunks with the same
//             results, so a base larger than the GPU's memory can be searched.
// base_norms  n squared norms of the base rows (L2 only; device or host memory; see fp32 above), or
//             nullptr to have them computed.
// queries     nq x dim, host or device memory.
// k           1 .. 2048; may exceed n.
// distances, ids
//             nq x k, host or device memory: per query the k closest rows, closest first, ties to the
//             smaller row number; where fewer than k rows exist (or pass the filter), ids are -1 and
//             distances +inf (L2) or -inf (similarities).
// n must be below 2^31 - 1 (rows are numbered in 32 bits on the device); larger is unsupported.
// Distances are the exact float32 ones described under ComputeMode. Non-finite inputs give
// unspecified results (NaN distances are never returned).
// mode        fp32 by default; invalid_argument for a value outside ComputeMode, and for fp16 when a
//             base or query value lies beyond half's range.
void knn(Resources& resources, Metric metric, const float* base, const float* base_norms, int64_t n,
         int64_t dim, const float* queries, int64_t nq, int64_t k, float* distances, int64_t* ids,
         const RowFilter& filter = RowFilter{}, ComputeMode mode = ComputeMode::fp32);
// The same over an index's stored vectors: their rows and norms, and the statistics of the rows that
// the fp32 mode's certificate needs, kept with the matrix (otherwise read from the rows every call).
void knn(Resources& resources, Metric metric, const DeviceMatrix& base, const float* queries, int64_t nq, int64_t k,
         float* distances, int64_t* ids, const RowFilter& filter = RowFilter{}, ComputeMode mode = ComputeMode::fp32);

// ---- k-means --------------------------------------------------------------------------------------

// k-means (Lloyd) as quiver::kmeans (cpp/cluster/kmeans.h) runs it on the CPU, with the same seeded
// sample of training points, initial centroids and splitting of empty clusters; the assignment is
// the exact search above with k = 1 (float32 mode: exact squared L2), the centroid update runs on the
// device in double, in a fixed order: a seed gives the same centroids on every run of one device.
// Results differ from the CPU's where near-ties are assigned differently.
//
// x           n x dim, finite, host or device memory.
// k           1 .. n.
// centroids   k x dim, written (host or device memory).
// assignments n nearest-centroid indices of every point, or nullptr (host or device memory).
// Returns the objective: the sum over all n points of the squared distance to their centroid.
KmeansResult kmeans(Resources& resources, int64_t dim, int64_t n, const float* x, int64_t k,
                    const KmeansOptions& options, float* centroids, int64_t* assignments);

}  // namespace quiver::gpu
