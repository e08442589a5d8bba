// gpu_metric.h's MetricDevice: a metric space's objects and its access methods' tables in one
// device's memory, and the helpers the searches share to validate and copy objects.
//
// Rows are numbered in 32 bits on the device (n < 2^31 - 1; the selection's "no row" is 2^31 - 1).
// List of Clusters is kept twice: as one int32 a row (cluster_of[row] is the row's cluster c, or ~c
// (negative) for the centre of c), which the k-NN scan tests in place while it writes a key for
// every row, and as member lists (member_begin / members, 32-bit), which a range search walks for
// the surviving clusters only. The SSS table is pivot-major (pivots x rows) so that a warp tests
// 32 consecutive rows against one pivot with one coalesced load.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cpp/backend/gpu_metric.h"
#include "cpp/core/metric.h"
#include "cpp/metric/objects.h"
#include "cuda/ivf/device_buffer.h"

namespace quiver::gpu {

class MetricDevice {
 public:
  MetricDevice(int device, Metric metric, int64_t dim) : device(device), metric(metric), dim(dim) {}

  bool strings() const { return dim == 0; }

  int device;
  Metric metric;
  int64_t dim;
  int64_t rows = 0;
  DeviceBuffer<float> vectors;   // rows x dim (vectors)
  DeviceBuffer<int64_t> offsets; // rows + 1, from 0 (strings)
  DeviceBuffer<uint8_t> bytes;   // offsets[rows] bytes, zero-padded past the last 8-byte boundary (strings)

  bool has_lc = false;
  int64_t clusters = 0;
  DeviceBuffer<int32_t> centre_rows;  // clusters
  DeviceBuffer<float> radii;          // clusters
  DeviceBuffer<int32_t> cluster_of;   // rows: c for a member of cluster c, ~c for its centre
  DeviceBuffer<int32_t> member_begin; // clusters + 1
  DeviceBuffer<int32_t> members;      // member_begin[clusters] rows, cluster by cluster
  DeviceBuffer<float> member_distances;  // member_begin[clusters]: each member's distance to its centre

  bool has_sss = false;
  int64_t pivots = 0;
  DeviceBuffer<int32_t> pivot_rows;  // pivots
  DeviceBuffer<float> table;         // pivots x rows: table[p * rows + row] = d(row, pivot p)
  // Vectors: the first pivots' distances in buckets, for the batched scan (cpp/metric/sss_buckets.h,
  // the index's copied as it is).
  int64_t bucket_pivots = 0;
  int64_t bucket_words = 0;            // words of a line: the rows' tiles x kTileWords
  DeviceBuffer<float> bucket_edges;    // bucket_pivots x kEdges
  DeviceBuffer<uint32_t> bucket_bits;  // bucket_pivots x (kBuckets + 1) x bucket_words
};

// The most rows a device space holds.
constexpr int64_t kMaxMetricRows = int64_t(INT32_MAX) - 1;

// Throws invalid_argument naming `what` unless `objects` are of the space's kind (vectors of `dim`
// floats, or strings when dim == 0) and well formed.
void check_metric_objects(const char* what, const Objects& objects, int64_t dim);

// Bytes of the device copy of strings' bytes: the bytes, zero-padded to the 8-byte boundary after
// the last one plus one more word (edit_distance.cuh reads whole aligned words).
int64_t padded_string_bytes(const Strings& strings);

// Copies strings (host memory) to the device, ordered on `stream`: offsets (n + 1, rebased to 0) and
// padded_string_bytes() bytes, the padding zeroed.
void copy_strings_to_device(Resources& resources, const Strings& strings, int64_t* offsets, uint8_t* bytes,
                            cudaStream_t stream);

}  // namespace quiver::gpu
