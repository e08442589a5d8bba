// "Replicated<R>,<kind>": R identical copies of an index of <kind> (or of a "Sharded<S>" index), each
// on its own device or group of devices. Adds and removals go to every replica; a query batch is
// split across the replicas, which search their slices at once. Concurrent small batches from several
// threads start on different replicas.
#pragma once

#include <atomic>

#include "cpp/multi/composite_index.h"

namespace quiver {

class ReplicatedIndex final : public CompositeIndex {
 public:
  using CompositeIndex::CompositeIndex;

  IndexKind kind() const override { return IndexKind::replicated; }
  int64_t count() const override { return parts_.front()->count(); }
  bool holds_id(int64_t id) const override { return parts_.front()->holds_id(id); }
  // Queries are checked a replica's slice at a time, on the replica's thread.
  bool prepares_query_slices() const override { return true; }

 protected:
  int64_t do_remove(int64_t n, const int64_t* ids) override;
  void add_batch(const Objects& x, const int64_t* ids) override;
  void search_batch(const Objects& queries, int64_t k, const SearchOptions& options, float* distances,
                    int64_t* ids) const override;
  RangeResult range_search_batch(const Objects& queries, float radius, const SearchOptions& options) const override;

 private:
  // How a batch of nq queries is split: `slices` slices, slice s to replica (first + s) % R.
  struct Split {
    int64_t slices;
    int64_t first;
    int64_t begin(int64_t s, int64_t nq) const { return s * nq / slices; }
  };
  Split split(int64_t nq) const;

  mutable std::atomic<uint64_t> next_replica_{0};
};

}  // namespace quiver
