// "Sharded<S>,<kind>": the data split over S parts, each an index of <kind> on one device. Adds go to
// the shards with the fewest objects (a shard whose device runs out of memory takes no more of that
// add), every query searches every shard at once, and the shards' results are merged on the host.
#pragma once

#include <mutex>

#include "cpp/multi/composite_index.h"
#include "cpp/multi/merge_results.h"

namespace quiver {

class ShardedIndex : public CompositeIndex {
 public:
  using CompositeIndex::CompositeIndex;

  IndexKind kind() const override { return IndexKind::sharded; }
  int64_t count() const override;
  bool holds_id(int64_t id) const override;

 protected:
  int64_t do_remove(int64_t n, const int64_t* ids) override;
  void add_batch(const Objects& x, const int64_t* ids) override;
  void search_batch(const Objects& queries, int64_t k, const SearchOptions& options, float* distances,
                    int64_t* ids) const override;
  RangeResult range_search_batch(const Objects& queries, float radius, const SearchOptions& options) const override;

 private:
  // The shards' k-NN result buffers (bounded: a search goes through them in chunks of queries), kept
  // between searches: a kept buffer is neither allocated nor faulted in again (at k = 100 that is
  // otherwise much of a search's host time).
  std::vector<PartResult> take_buffers() const;
  void give_back(std::vector<PartResult> buffers) const;

  mutable std::mutex buffers_mutex_;
  mutable std::vector<std::vector<PartResult>> spare_buffers_;
};

// How many of n new objects each shard takes so that the counts even out, shards marked full taking
// none. At least one shard must not be full.
std::vector<int64_t> balanced_shares(int64_t n, const std::vector<int64_t>& counts, const std::vector<bool>& full);

}  // namespace quiver
