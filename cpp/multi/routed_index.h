// "Routed<S>,LC<b>": the metric-space paper's 2-Stage strategy for List of Clusters over several
// devices (its 1-Stage strategy is "Sharded<S>,LC<b>": every device searches its own objects for
// every query). Placement: the first add builds one List of Clusters over all the objects and deals
// its clusters to the S parts in turn, as the paper distributes the clusters of one global index;
// each part, an "LC<b>" index on its device, holds the objects of its clusters. The clusters stay
// as a routing table (cluster_routes.h). Range search: stage 1, on the CPU, walks the table for each
// query to find the parts its ball reaches; stage 2 sends each part only those queries. k-NN
// searches ask every part (their radius is not known in advance).
#pragma once

#include <atomic>

#include "cpp/multi/cluster_routes.h"
#include "cpp/multi/sharded_index.h"

namespace quiver {

class RoutedIndex final : public ShardedIndex {
 public:
  RoutedIndex(Context& context, std::vector<Context*> devices, std::string descriptor, int64_t dim, Metric metric,
              MultiSpec spec);

  IndexKind kind() const override { return IndexKind::routed; }
  MemoryUse memory() const override;

  // Of the last range search's (query, part) pairs, the fraction stage 1 sent to a part.
  double last_routed_fraction() const { return last_routed_fraction_; }

 protected:
  void add_batch(const Objects& x, const int64_t* ids) override;
  RangeResult range_search_batch(const Objects& queries, float radius, const SearchOptions& options) const override;
  void save_extra(ByteWriter& out) const override;
  void load_extra(ByteReader& in) override;

 private:
  int64_t bucket_;
  ClusterRoutes routes_;
  mutable std::atomic<double> last_routed_fraction_{1.0};
};

}  // namespace quiver
