// Sparse Spatial Selection (Brisaboa et al.), as the metric-space paper uses it: scanning the
// objects in order, an object becomes a pivot when it is farther than alpha x M from every pivot so
// far (M: the largest distance between objects, estimated on a sample), up to a cap. Every object's
// distances to the pivots are kept in a table; a query computes its own, and an object x is
// discarded without a distance when |d(x,p) - d(q,p)| > r for some pivot p. Range and k-NN searches
// test the first pivots through their bucketed distances (sss_buckets.h) 32 rows at a time, then the
// exact test on the rows left.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "cpp/backend/gpu_metric.h"
#include "cpp/metric/metric_method.h"
#include "cpp/metric/sss_buckets.h"

namespace quiver {

class SssPivots final : public MetricMethod {
 public:
  SssPivots(Metric metric, float alpha, int64_t max_pivots)
      : MetricMethod(metric), alpha_(alpha), max_pivots_(max_pivots) {}

  void build(ThreadPool& pool, const Objects& objects) override;
  // New objects get their table rows; one far enough from every pivot becomes a pivot while there
  // is room (a new table column for every object).
  void insert(ThreadPool& pool, const Objects& objects, int64_t first_row) override;
  bool erase(const std::vector<int64_t>& rows) override;

  int64_t range(const QueryDistance& query, const Objects& objects, float r, const RowAllowed& allowed,
                std::vector<MetricHit>& hits) const override;
  int64_t knn(const QueryDistance& query, const Objects& objects, const RowAllowed& allowed,
              HitHeap& best) const override;

  int64_t memory_bytes() const override;
  void save(ByteWriter& out) const override;
  void load(ByteReader& in, int64_t rows) override;

  int64_t pivots() const { return static_cast<int64_t>(pivots_.size()); }
  gpu::SssTables tables() const;

 private:
  // Chooses pivots among rows first_row .. n-1 and recomputes the table.
  void add_pivots(ThreadPool& pool, const Objects& objects, int64_t first_row);
  // The query's distances to the pivots.
  std::vector<float> pivot_distances(const QueryDistance& query, const Objects& objects) const;
  // Whether one pivot proves d(q, x) > r: |d(x,p) - d(q,p)| > r, beyond rounding.
  bool pivot_excludes(float table_value, float query_value, float r) const;
  // The table values t a row may have and pass pivot_excludes for a query at distance query_value
  // from the pivot, widened outwards (NaN never: infinite ends where either is not finite).
  std::pair<float, float> kept_interval(float query_value, float r) const;
  // Per bucketed pivot, the buckets [lo, hi] of the table values kept_interval keeps for radius r.
  struct BucketRanges {
    int lo[sss_buckets::kPivots], hi[sss_buckets::kPivots];
  };
  BucketRanges bucket_ranges(const std::vector<float>& dq, float r) const;
  // The rows w * 32 .. w * 32 + 31 that exist (bit i: row w * 32 + i).
  uint32_t existing_rows(int64_t w) const;
  // Those of them every bucketed pivot keeps for `ranges`.
  uint32_t kept_word(const BucketRanges& ranges, int64_t w) const;
  // Whether some pivot proves d(q, row) > r.
  bool excluded(int64_t row, const std::vector<float>& dq, float r) const;

  float alpha_;
  int64_t max_pivots_;
  float max_distance_ = 0.0f;      // M
  std::vector<int64_t> pivots_;    // rows
  std::vector<float> table_;       // rows x pivots
  int64_t rows_ = 0;
  SssBuckets buckets_;             // of table_
};

}  // namespace quiver
