// The routing table of a "Routed" index (routed_index.h): the clusters of one List of Clusters over
// its objects, as balls in build order (centre object, covering radius), each with the part that
// holds its objects. It places new objects and runs stage 1 of the 2-Stage search. Only the centres
// are kept, not the members.
//
// The List of Clusters invariant holds throughout: an object outside clusters 0 .. c lies at
// distance >= radius(c) from centre c. A new object joins the first cluster whose ball covers it
// (it was outside every earlier ball) or, covered by none, becomes a cluster of its own at the end
// with radius 0. So a query ball inside some cluster's ball ends the walk, as in the paper's stage 1.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/core/metric.h"
#include "cpp/metric/object_store.h"

namespace quiver {

class ByteReader;
class ByteWriter;
class ThreadPool;

class ClusterRoutes {
 public:
  // metric: a true metric (l2, l1, linf, edit); dim 0 for strings.
  ClusterRoutes(Metric metric, int64_t dim) : metric_(metric), centres_(dim) {}

  int64_t clusters() const { return static_cast<int64_t>(radii_.size()); }

  // Replaces the routes by the clusters of a List of Clusters (bucket objects besides each centre)
  // over x, dealt to `parts` parts in turn. Returns each object's part.
  std::vector<int64_t> build(ThreadPool& pool, const Objects& x, int64_t bucket, int64_t parts);

  // The parts of new objects x (see the invariant above). sizes: the parts' object counts, which
  // pick the part of a new cluster (the emptiest) and are updated.
  std::vector<int64_t> place(ThreadPool& pool, const Objects& x, std::vector<int64_t>& sizes);

  // Stage 1: for each of `parts` parts, the queries whose ball of radius r (true units) meets one of
  // the part's clusters, walking the clusters in order until the ball lies inside one of them.
  std::vector<std::vector<int64_t>> route(ThreadPool& pool, const Objects& queries, float r, int64_t parts) const;

  int64_t memory_bytes() const;
  void save(ByteWriter& out) const;
  // corrupt_data when the table does not parse or names a part outside 0 .. parts - 1.
  void load(ByteReader& in, int64_t parts);

 private:
  Metric metric_;
  ObjectStore centres_;
  std::vector<float> radii_;
  std::vector<int32_t> owners_;
};

}  // namespace quiver
