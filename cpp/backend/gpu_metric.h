// What the engine knows of the GPU metric-space search (cuda/metric/): the objects of a metric-space
// index (float vectors under L2 / L1 / L-infinity, or byte strings under edit distance) copied to
// one device, with the tables of its access method, searched one block per query as in the
// metric-space paper (Tenllado, Prieto Matias, Marin et al.): brute force, List of Clusters, SSS.
// The index (cpp/metric/metric_index.*) keeps the authoritative copy on the host and uploads it
// again after every change.
//
// Distances here are the metric's true distance (Euclidean, not squared, for L2; integers for edit
// distance), so the triangle inequality holds; the index converts at its edge. L2 range hits come
// back squared, already the caller's units (MetricHits).
//
// Errors as in gpu.h. Every call blocks until its outputs are written and keeps no caller pointer.
// Searches on one MetricDevice may run from several threads at once; uploads need exclusive access.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/metric.h"
#include "cpp/core/result_memory.h"
#include "cpp/metric/objects.h"
#include "cpp/metric/sss_buckets.h"

namespace quiver::gpu {

// List of Clusters over rows 0 .. n-1 of the objects: cluster c has centre centre_rows[c] and
// covering radius radii[c] (every member's distance to the centre is <= radii[c]); its members
// (centre excluded) are members[member_begin[c] .. member_begin[c + 1]). Every object that is
// neither centre nor member of clusters 0 .. c has distance >= radii[c] to centre c (strictly
// greater is not required), which is what lets a search stop early. Every row is a centre or a
// member of exactly one cluster.
struct LcTables {
  int64_t clusters = 0;
  const int64_t* centre_rows = nullptr;   // clusters
  const float* radii = nullptr;           // clusters
  const int64_t* member_begin = nullptr;  // clusters + 1
  const int64_t* members = nullptr;       // member_begin[clusters] rows
};

// SSS: pivots (rows of the objects) and table[row * pivots + p] = d(object row, pivot p).
struct SssTables {
  int64_t pivots = 0;
  const int64_t* pivot_rows = nullptr;  // pivots
  const float* table = nullptr;         // n x pivots, row-major
  const SssBuckets* buckets = nullptr;  // the first pivots' distances in buckets (sss_buckets.h)
};

enum class MetricMethod : int32_t { brute_force = 0, list_of_clusters = 1, sss = 2 };

class MetricDevice;

// An empty space. metric: l2, l1, linf (vectors of dim floats) or edit (dim == 0, strings).
MetricDevice* metric_create(Resources& resources, Metric metric, int64_t dim);
void metric_free(MetricDevice* device) noexcept;

struct MetricDeviceDeleter {
  void operator()(MetricDevice* device) const noexcept { metric_free(device); }
};
using MetricDevicePtr = std::unique_ptr<MetricDevice, MetricDeviceDeleter>;
inline MetricDevicePtr make_metric_device(Resources& resources, Metric metric, int64_t dim) {
  return MetricDevicePtr(metric_create(resources, metric, dim));
}

// Replaces the contents (all or nothing: on out_of_device_memory the old contents stay): the
// objects (host memory, of the device's kind), and the tables of the methods the index uses
// (nullptr: that method is not available until a later upload).
void metric_upload(Resources& resources, MetricDevice& device, const Objects& objects,
                   const LcTables* lc, const SssTables* sss);

int64_t metric_rows(const MetricDevice& device);
int64_t metric_device_bytes(const MetricDevice& device);

// Range search results by row: query q's hits are rows[lims[q] .. lims[q + 1]) with their
// distances, sorted by (distance, row). Host memory. In L2 spaces the distances are squared: each
// the float cpp/distance/vectors.h's squared_l2 gives for the pair (the same operations in the same
// order), the caller's units; the hits are those whose true distance is within the radius.
struct MetricHits {
  std::vector<int64_t> lims;
  ResultVector<int64_t> rows;
  ResultVector<float> distances;
  std::vector<int64_t> evaluations;  // per query: distances computed (centres, pivots, objects)
};

// Every row within `radius` (<=) of each query, found with `method` (its tables uploaded). Rows
// the filter excludes are not reported. A query with more than max_hits_per_query hits fails the
// call with too_many_results naming the query and the cap (memory stays bounded whatever the radius).
// queries: host memory, of the device's kind; radius >= 0.
MetricHits metric_range_search(Resources& resources, const MetricDevice& device, MetricMethod method,
                               const Objects& queries, float radius, const RowFilter& filter,
                               int64_t max_hits_per_query);

// The k rows closest to each query (ties to the smaller row), found with `method`; rows the filter
// excludes are skipped; missing results are row -1 and distance +infinity. Host outputs nq x k.
void metric_knn(Resources& resources, const MetricDevice& device, MetricMethod method,
                const Objects& queries, int64_t k, const RowFilter& filter, float* distances,
                int64_t* rows);

}  // namespace quiver::gpu
