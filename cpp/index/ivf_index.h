// "IVF<nlist>,Flat" and "[OPQ<M>,]IVF<nlist>,PQ<M>[,Refine]" on the CPU: a trained model
// (ivf_model.h), inverted lists in host memory (ivf_lists.h) and the ids of all entries (ivf_ids.h).
// Searches run ivf_flat.h or ivf_pq.h; saved files are those of the GPU kind too (ivf_payload.h).
//
// Training an index that is already trained replaces its model while it is empty; once it holds
// vectors, train is refused (invalid_argument): their codes belong to the old model.
#pragma once

#include <memory>
#include <vector>

#include "cpp/index/index.h"
#include "cpp/index/ivf_ids.h"
#include "cpp/index/ivf_lists.h"
#include "cpp/index/ivf_model.h"
#include "cpp/index/ivf_spec.h"

namespace quiver {

class IvfIndex final : public Index {
 public:
  IvfIndex(Context& context, std::string descriptor, int64_t dim, Metric metric, const IvfSpec& spec);

  IndexKind kind() const override { return spec_.is_pq() ? IndexKind::ivf_pq : IndexKind::ivf_flat; }
  bool is_trained() const override { return model_ != nullptr; }
  int64_t count() const override { return ids_.size(); }
  bool holds_id(int64_t id) const override { return ids_.list_of(id) >= 0; }
  MemoryUse memory() const override;

  void save_payload(ByteWriter& out) const override;
  void load_payload(ByteReader& in, int64_t count) override;

 protected:
  void do_train(int64_t n, const float* x) override;
  void do_add(int64_t n, const float* x, const int64_t* ids) override;
  void do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                 float* distances, int64_t* ids) const override;
  RangeResult do_range_search(int64_t nq, const float* queries, float radius,
                              const SearchOptions& options) const override;
  int64_t do_remove(int64_t n, const int64_t* ids) override;

 private:
  // Makes `model` the index's model, with `lists` and its search tables. Strong guarantee.
  void install(std::unique_ptr<IvfModel> model, std::unique_ptr<InvertedLists> lists);

  IvfSpec spec_;
  std::unique_ptr<const IvfModel> model_;
  std::unique_ptr<InvertedLists> lists_;
  std::vector<float> list_tables_;  // IVF-PQ with L2: precomputed term-1 tables (ivf_pq.h), or empty
  IvfIds ids_;
};

// The lists' layout for a model: what each entry stores on the host.
ListLayout list_layout(const IvfModel& model);

}  // namespace quiver
