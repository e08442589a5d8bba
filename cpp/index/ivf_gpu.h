// The inverted-file kinds on a CUDA context: the model is trained on the host (coarse k-means on the
// GPU, gpu::kmeans), then handed to the CUDA backend (backend/gpu_ivf.h), which holds the lists in
// device memory, encodes added vectors and searches there. The ids are also kept on the host
// (ivf_ids.h) for duplicate checks and removal by id.
//
// Saved files are those of the CPU kind (ivf_payload.h): the lists are read back from the device
// and stored with the same codes, so an index moves between CPU and GPU by save and load.
// Range search runs on the device (gpu::ivf_range_search) for IVF-Flat and IVF-PQ, with or without
// ",Refine": the same lists probed and the same hits as the CPU kind's (ivf_range.h), distances in
// float32 summed in another order (so hits within rounding of the radius may differ; IVF-PQ without
// ",Refine" computes the distance to the decoded vector rather than summing look-up tables). Only an
// nprobe above 2048 and below nlist (beyond the device's coarse selection) falls back to the CPU over
// host copies of the lists.
#pragma once

#include <memory>

#include "cpp/backend/gpu_ivf.h"
#include "cpp/index/index.h"
#include "cpp/index/ivf_ids.h"
#include "cpp/index/ivf_model.h"
#include "cpp/index/ivf_payload.h"
#include "cpp/index/ivf_spec.h"

namespace quiver {

class GpuIvfIndex final : public Index {
 public:
  GpuIvfIndex(Context& context, std::string descriptor, int64_t dim, Metric metric, const IvfSpec& spec);

  IndexKind kind() const override { return spec_.is_pq() ? IndexKind::ivf_pq : IndexKind::ivf_flat; }
  bool is_trained() const override { return model_ != nullptr; }
  int64_t count() const override { return ids_.size(); }
  bool holds_id(int64_t id) const override { return ids_.list_of(id) >= 0; }
  DeviceKind device() const override { return DeviceKind::cuda; }
  // Ids on the host ("HostIds") are looked up there.
  bool writes_device_results() const override { return !spec_.host_ids; }
  bool searches_device_memory(int64_t, const SearchOptions&) const override { return true; }
  bool checks_queries_while_searching() const override { return true; }
  MemoryUse memory() const override;

  void save_payload(ByteWriter& out) const override;
  void load_payload(ByteReader& in, int64_t count) override;

 protected:
  // Training reads a host copy of x (the quantizers train on the host; k-means on the device).
  void do_train(int64_t n, const float* x) override;
  void do_add(int64_t n, const float* x, const int64_t* ids) override;
  void do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                 float* distances, int64_t* ids) const override;
  RangeResult do_range_search(int64_t nq, const float* queries, float radius,
                              const SearchOptions& options) const override;
  int64_t do_remove(int64_t n, const int64_t* ids) override;

 private:
  // Copies list `list` back from the device, in its stored form (ivf_payload.h); reuses stored's buffers.
  void read_device_list(int64_t list, StoredList& stored) const;

  IvfSpec spec_;
  std::unique_ptr<const IvfModel> model_;
  gpu::IvfDevicePtr ivf_;
  IvfIds ids_;
};

}  // namespace quiver
