// "Sharded<S>,<kind>": the data split over S parts, each an index of <kind> on one device. Adds go to
// the shards with the fewest objects (a shard whose device runs out of memory takes no more of that
// add), every query searches every shard at once, and the shards' results are merged: on the GPUs
// when every shard searches into its GPU's memory (GPU Flat and IVF kinds; each run of rows as soon
// as every shard has it, pipelined_merge.h), else on the host.
#pragma once

#include <mutex>
#include <utility>

#include "cpp/backend/gpu_multi.h"
#include "cpp/multi/composite_index.h"
#include "cpp/multi/merge_results.h"
#include "cpp/multi/pipelined_merge.h"

namespace quiver {

// Sets of buffers kept between calls, one set per concurrent caller: a kept buffer is neither
// allocated nor faulted in again.
template <typename Set>
class KeptSets {
 public:
  // A set for one call (a kept one, or an empty one to fill), back among the kept when the call ends,
  // however it ends.
  class Lease {
   public:
    explicit Lease(KeptSets& sets) : sets_(sets), set_(sets.take()) {}
    ~Lease() { sets_.give_back(std::move(set_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Set& operator*() { return set_; }

   private:
    KeptSets& sets_;
    Set set_;
  };

 private:
  Set take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (spare_.empty()) return {};
    Set set = std::move(spare_.back());
    spare_.pop_back();
    return set;
  }
  // Dropped if it cannot be kept (out of memory): kept sets are a cache.
  void give_back(Set set) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      spare_.push_back(std::move(set));
    } catch (...) {
    }
  }

  std::mutex mutex_;
  std::vector<Set> spare_;
};

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
  // Whether every shard writes its results in its GPU's memory: they are then merged on a GPU.
  bool merges_on_device() const;
  void search_merging_on_device(const Objects& queries, int64_t k, const SearchOptions& options, float* distances,
                                int64_t* ids) const;
  void search_merging_on_host(const Objects& queries, int64_t k, const SearchOptions& options, float* distances,
                              int64_t* ids) const;

  // The shards' k-NN result buffers (bounded: a search goes through them in chunks of queries), on
  // the host (at k = 100 allocating and faulting them in is otherwise much of a search's host time)
  // or on the shards' devices; at most 512 MiB a set of all shards', a set per concurrent caller,
  // kept until the index is freed (like the devices' memory pools, not counted in memory()).
  mutable KeptSets<std::vector<PartResult>> host_buffers_;
  // With the device buffers, a Resources on each shard's device for the merges, which run while the
  // shards' own Resources search.
  struct DeviceMergeSet {
    std::vector<gpu::ResourcesPtr> mergers;
    std::vector<gpu::ResultBufferPtr> buffers;
  };
  mutable KeptSets<DeviceMergeSet> device_sets_;
};

// How many of n new objects each shard takes so that the counts even out, shards marked full taking
// none. At least one shard must not be full.
std::vector<int64_t> balanced_shares(int64_t n, const std::vector<int64_t>& counts, const std::vector<bool>& full);

}  // namespace quiver
