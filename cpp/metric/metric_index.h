// The metric-space index kinds: "Flat" of L1, L-infinity or edit distance (brute force), "LC<b>"
// (List of Clusters) and "SSS<alpha>" (pivots), over float vectors or byte strings. One class: the
// objects and ids are the same for every kind; the access method (metric_method.h) differs. The
// index lives in host memory; on a CUDA context a copy on the device (gpu_metric.h) is searched
// there, one block a query, and the CPU searches where the copy does not fit.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "cpp/backend/gpu_metric.h"
#include "cpp/core/result_memory.h"
#include "cpp/index/id_map.h"
#include "cpp/index/index.h"
#include "cpp/metric/metric_method.h"
#include "cpp/metric/metric_spec.h"
#include "cpp/metric/object_store.h"

namespace quiver {

class MetricIndex final : public Index {
 public:
  // Throws unsupported for a metric the method cannot serve (inner product, cosine).
  MetricIndex(Context& context, std::string descriptor, int64_t dim, Metric metric, const MetricSpec& spec);

  IndexKind kind() const override;
  bool is_trained() const override { return true; }
  int64_t count() const override { return ids_.size(); }
  bool holds_id(int64_t id) const override { return ids_.row_of(id) >= 0; }
  MemoryUse memory() const override;
  DeviceKind device() const override { return context().device(); }
  bool reads_device_memory() const override { return false; }

  void save_payload(ByteWriter& out) const override;
  void load_payload(ByteReader& in, int64_t count) override;

  // Distances computed by the last search's queries, summed (benchmarks report it per query).
  int64_t last_evaluations() const { return last_evaluations_; }

 protected:
  void do_train(int64_t, const float*) override {}
  void do_add(int64_t n, const float* x, const int64_t* ids) override;
  void do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                 float* distances, int64_t* ids) const override;
  RangeResult do_range_search(int64_t nq, const float* queries, float radius,
                              const SearchOptions& options) const override;
  int64_t do_remove(int64_t n, const int64_t* ids) override;
  void do_add_strings(const Strings& x, const int64_t* ids) override;
  void do_search_strings(const Strings& queries, int64_t k, const SearchOptions& options, float* distances,
                         int64_t* ids) const override;
  RangeResult do_range_search_strings(const Strings& queries, float radius,
                                      const SearchOptions& options) const override;

 private:
  std::unique_ptr<MetricMethod> make_method() const;
  void add_objects(const Objects& x, const int64_t* ids);
  void search_objects(const Objects& queries, int64_t k, const SearchOptions& options, float* distances,
                      int64_t* ids) const;
  RangeResult range_objects(const Objects& queries, float radius, const SearchOptions& options) const;
  // Hits by row in CSR form (lims: nq + 1), each query's sorted by (distance, row); the columns are
  // result_memory.h's, so that a large result's pages are not faulted in anew.
  struct RowHits {
    std::vector<int64_t> lims;
    ResultVector<int64_t> rows;
    ResultVector<float> distances;
    // The distances are the caller's (squared for L2), in order; false only for the device's L2
    // hits when its squares differ from the host's: to be squared anew and sorted (to_caller_units).
    bool caller_units = false;
  };
  RowHits cpu_range(const Objects& queries, float r, const SearchOptions& options) const;
  RowHits gpu_range(const Objects& queries, float r, const SearchOptions& options) const;
  // Hits' distances in the caller's units (squared for L2: recomputed exactly), re-sorted.
  void to_caller_units(const Objects& queries, int64_t q, MetricHit* begin, MetricHit* end) const;
  void update_device_copy();

  MetricSpec spec_;
  ObjectStore objects_;
  IdMap ids_;
  std::unique_ptr<MetricMethod> method_;
  gpu::MetricDevicePtr device_copy_;  // CUDA contexts only
  bool device_copy_current_ = false;
  mutable std::atomic<int64_t> last_evaluations_{0};
};

}  // namespace quiver
