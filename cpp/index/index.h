// The index interface every kind implements. The public members validate arguments once, for every
// kind, then call the kind's do_* member; the kinds assume valid input.
#pragma once

#include <cstdint>
#include <string>

#include "cpp/core/compute_mode.h"
#include "cpp/core/context.h"
#include "cpp/core/metric.h"
#include "cpp/exact/range.h"
#include "cpp/select/topk.h"

namespace quiver {

class ByteWriter;
class ByteReader;

// Index kinds as stored in files; never renumber.
enum class IndexKind : uint32_t { flat = 1, ivf_flat = 2, ivf_pq = 3, graph = 4 };

// SearchOptions::nprobe when the caller leaves it to the index (QV_NPROBE_DEFAULT).
constexpr uint32_t kNprobeDefault = 0xFFFFFFFFu;

struct SearchOptions {
  IdFilter filter;
  // Inverted-file indexes: lists visited, 1 .. nlist, or kNprobeDefault; other kinds ignore it.
  uint32_t nprobe = kNprobeDefault;
  // Graph indexes: the candidate pool of the beam search, raised to k; 0: the index's default.
  uint32_t search_width = 0;
  ComputeMode compute_mode = ComputeMode::fp32;
  // ",Refine" indexes: refine_factor * k candidates are re-ranked exactly; 0: the index's default.
  uint32_t refine_factor = 0;
};

struct MemoryUse {
  int64_t host_bytes = 0;
  int64_t device_bytes = 0;
};

// Largest k of k-NN searches (QV_MAX_K).
constexpr int64_t kMaxK = 2048;
// Largest vector dimension accepted.
constexpr int64_t kMaxDim = 65536;

class Index {
 public:
  Index(Context& context, std::string descriptor, int64_t dim, Metric metric);
  virtual ~Index() = default;
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  Context& context() const { return context_; }
  const std::string& descriptor() const { return descriptor_; }
  int64_t dim() const { return dim_; }
  Metric metric() const { return metric_; }

  virtual IndexKind kind() const = 0;
  virtual bool is_trained() const = 0;
  virtual int64_t count() const = 0;
  virtual MemoryUse memory() const = 0;
  virtual DeviceKind device() const { return DeviceKind::cpu; }
  // Whether the kind's train/add/search read device memory directly (GPU kinds); others get host
  // copies of device inputs.
  virtual bool reads_device_memory() const { return device() == DeviceKind::cuda; }

  void train(int64_t n, const float* x);
  void add(int64_t n, const float* x, const int64_t* ids);
  void search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
              float* distances, int64_t* ids) const;
  RangeResult range_search(int64_t nq, const float* queries, float radius,
                           const SearchOptions& options) const;
  int64_t remove(int64_t n, const int64_t* ids);

  // The kind's own part of a saved index (after the common header) and its inverse.
  virtual void save_payload(ByteWriter& out) const = 0;
  virtual void load_payload(ByteReader& in, int64_t count) = 0;

 protected:
  // Vectors are finite, normalised for cosine, n >= 1; ids validated by the kind (see IdMap).
  virtual void do_train(int64_t n, const float* x) = 0;
  virtual void do_add(int64_t n, const float* x, const int64_t* ids) = 0;
  virtual void do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                         float* distances, int64_t* ids) const = 0;
  virtual RangeResult do_range_search(int64_t nq, const float* queries, float radius,
                                      const SearchOptions& options) const = 0;
  virtual int64_t do_remove(int64_t n, const int64_t* ids) = 0;

 private:
  Context& context_;
  std::string descriptor_;
  int64_t dim_;
  Metric metric_;
};

}  // namespace quiver
