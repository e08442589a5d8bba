// "Flat" on a CUDA context: the vectors live in device memory (gpu::DeviceMatrix) and searches run
// the CUDA backend's exact k-NN. Saved files are the same as the CPU Flat index's, so an index moves
// between devices by save and load.
#pragma once

#include <mutex>

#include "cpp/backend/gpu.h"
#include "cpp/index/id_map.h"
#include "cpp/index/index.h"

namespace quiver {

class GpuFlatIndex final : public Index {
 public:
  GpuFlatIndex(Context& context, std::string descriptor, int64_t dim, Metric metric);

  IndexKind kind() const override { return IndexKind::flat; }
  bool is_trained() const override { return true; }
  int64_t count() const override { return ids_.size(); }
  bool holds_id(int64_t id) const override { return ids_.row_of(id) >= 0; }
  DeviceKind device() const override { return DeviceKind::cuda; }
  // Results in device memory get their ids there (an id table on the device).
  bool writes_device_results() const override { return true; }
  bool searches_device_memory(int64_t, const SearchOptions&) const override { return true; }
  MemoryUse memory() const override;

  void save_payload(ByteWriter& out) const override;
  void load_payload(ByteReader& in, int64_t count) override;

 protected:
  void do_train(int64_t, const float*) override {}
  void do_add(int64_t n, const float* x, const int64_t* ids) override;
  void do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                 float* distances, int64_t* ids) const override;
  // Exact, on the GPU (cpp/backend/gpu_range.h); ids and the id filter translated from and to rows.
  RangeResult do_range_search(int64_t nq, const float* queries, float radius,
                              const SearchOptions& options) const override;
  int64_t do_remove(int64_t n, const int64_t* ids) override;

 private:
  std::vector<float> host_vectors() const;
  // Replaces the row numbers of n results by their ids (-1 stays -1), in host memory.
  void rows_to_ids(int64_t n, int64_t* rows) const;

  // The ids on the device, made by the first search into device memory after a change (adds,
  // removals and loads drop it; they have the index to themselves).
  const gpu::IdTable& device_ids() const;

  gpu::DeviceMatrixPtr matrix_;
  IdMap ids_;
  mutable std::mutex device_ids_mutex_;
  mutable gpu::IdTablePtr device_ids_;
};

}  // namespace quiver
