// "Flat": exact search over the raw vectors. No training; search is the exact engine (exact/).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "cpp/exact/knn_bf16.h"
#include "cpp/index/id_map.h"
#include "cpp/index/index.h"

namespace quiver {

class FlatIndex final : public Index {
 public:
  FlatIndex(Context& context, std::string descriptor, int64_t dim, Metric metric);

  IndexKind kind() const override { return IndexKind::flat; }
  bool is_trained() const override { return true; }
  int64_t count() const override { return ids_.size(); }
  bool holds_id(int64_t id) const override { return ids_.row_of(id) >= 0; }
  MemoryUse memory() const override;

  void save_payload(ByteWriter& out) const override;
  void load_payload(ByteReader& in, int64_t count) override;

 protected:
  void do_train(int64_t, const float*) override {}
  void do_add(int64_t n, const float* x, const int64_t* ids) override;
  void do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                 float* distances, int64_t* ids) const override;
  RangeResult do_range_search(int64_t nq, const float* queries, float radius,
                              const SearchOptions& options) const override;
  int64_t do_remove(int64_t n, const int64_t* ids) override;

 private:
  Database database() const;
  // The bfloat16 copy the faster exact path searches, made by the first search that uses it after
  // the vectors change (add and remove drop it; they have exclusive access, searches share it).
  std::shared_ptr<const Bf16Database> bf16_database() const;

  std::vector<float> vectors_;  // count x dim, normalised for cosine
  std::vector<float> norms_;    // squared norms, for L2
  IdMap ids_;
  mutable std::mutex bf16_mutex_;
  mutable std::shared_ptr<const Bf16Database> bf16_;
};

}  // namespace quiver
