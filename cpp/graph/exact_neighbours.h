// Exact k-NN of query rows against one data set whose preparation is paid once: the k-NN graph
// asks for the neighbours of the same data set chunk by chunk (and again for a recall sample), and
// re-validating, re-normalising and re-packing all n rows per chunk, as knn_arrays would, costs
// O(n * dim) a chunk for nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/input.h"
#include "cpp/core/metric.h"
#include "cpp/exact/database.h"

namespace quiver {

class Context;
struct Bf16Database;

class ExactNeighbours {
 public:
  // data: prepared by prepare_input (checked, normalised for cosine); host memory, or device memory
  // on a CUDA context. Borrowed for the object's lifetime.
  ExactNeighbours(Context& context, Metric metric, int64_t dim, int64_t n, const Input& data);
  ~ExactNeighbours();

  // The k nearest rows of the data set (self included, if a query is a row) of each of nq queries
  // (prepared as the data, host memory or, on a CUDA context, device memory): distances in the
  // metric's units and ids, closest first, ties to the smaller row; host outputs.
  void search(int64_t nq, const float* queries, int64_t k, float* distances, int64_t* ids);
  // The same for rows [first, first + count) of the data set as the queries. On a CUDA context with
  // the data in host memory, the first call copies the data set to the device (where it fits) for
  // this and every later search: a whole graph's chunks then read the base from there.
  void search_rows(int64_t first, int64_t count, int64_t k, float* distances, int64_t* ids);

 private:
  void copy_to_device();
  // The data set's rows the searches read: the device copy, or data_.data.
  const float* rows() const;

  Context& context_;
  Metric metric_;
  int64_t dim_, n_;
  const Input& data_;
  // CUDA context, data in host memory: a device copy with its norms, made once (every chunk's
  // search would copy the whole base again); null where the device cannot hold it.
  bool tried_copy_ = false;
  gpu::DeviceMatrixPtr device_copy_;
  Database db_;  // CPU only
  std::vector<float> norms_;
  std::unique_ptr<Bf16Database> bf16_;  // CPU only, when the bfloat16 path pays off
};

}  // namespace quiver
