// List of Clusters (Chávez and Navarro), as the metric-space paper uses it: centres chosen one after
// another, each the remaining object with the largest sum of distances to the earlier centres; each
// centre takes the `bucket` nearest remaining objects and records its covering radius. An object
// left for later clusters is never closer to a centre than that centre's radius, so a query ball
// inside a cluster's ball ends the scan, and a ball disjoint from it skips the cluster.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/backend/gpu_metric.h"
#include "cpp/metric/metric_method.h"

namespace quiver {

class ListOfClusters final : public MetricMethod {
 public:
  ListOfClusters(Metric metric, int64_t bucket) : MetricMethod(metric), bucket_(bucket) {}

  void build(ThreadPool& pool, const Objects& objects) override;
  // New objects join the first cluster that covers them, else the last one while it has room
  // (growing its radius), else start a cluster of their own: the order invariant holds throughout.
  void insert(ThreadPool& pool, const Objects& objects, int64_t first_row) override;
  bool erase(const std::vector<int64_t>& rows) override;

  int64_t range(const QueryDistance& query, const Objects& objects, float r, const RowAllowed& allowed,
                std::vector<MetricHit>& hits) const override;
  int64_t knn(const QueryDistance& query, const Objects& objects, const RowAllowed& allowed,
              HitHeap& best) const override;

  int64_t memory_bytes() const override;
  void save(ByteWriter& out) const override;
  void load(ByteReader& in, int64_t rows) override;

  int64_t clusters() const { return static_cast<int64_t>(clusters_.size()); }
  // The tables in the GPU backend's flat layout; `storage` keeps the arrays alive.
  struct FlatTables {
    std::vector<int64_t> centre_rows, member_begin, members;
    std::vector<float> radii;
    gpu::LcTables view() const;
  };
  FlatTables flat_tables() const;

 private:
  struct Cluster {
    int64_t centre = 0;
    float radius = 0.0f;
    std::vector<int64_t> members;         // rows, centre excluded
    std::vector<float> member_distances;  // to the centre, for a cheap first filter
  };

  // Visits the clusters in order for a query with radius `radius()` (which may shrink as `visit`
  // finds hits), calling visit(row, lower_bound) for the centre and every member not pruned.
  template <typename Radius, typename Visit>
  int64_t scan(const QueryDistance& query, const Objects& objects, Radius radius, Visit visit) const;

  int64_t bucket_;
  std::vector<Cluster> clusters_;
};

}  // namespace quiver
