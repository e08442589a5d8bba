// An access method of a metric-space index (brute force, List of Clusters, SSS): a structure over
// the rows of an ObjectStore that answers range and k-NN queries exactly, pruning with the triangle
// inequality where it can. The index owns the objects and ids; the method owns only its tables.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "cpp/core/metric.h"
#include "cpp/metric/objects.h"
#include "cpp/metric/query_distance.h"
#include "cpp/select/topk.h"

namespace quiver {

class ByteReader;
class ByteWriter;
class ThreadPool;

// A result by row; ordered by distance, then row.
struct MetricHit {
  float distance;
  int64_t row;
  bool operator<(const MetricHit& other) const {
    return distance < other.distance || (distance == other.distance && row < other.row);
  }
};

// Which rows a search may return: the id filter applied to each row's id (ids == nullptr: ids are
// row numbers).
struct RowAllowed {
  const IdFilter* filter = nullptr;
  const int64_t* ids = nullptr;
  bool operator()(int64_t row) const {
    return filter == nullptr || filter->allows(ids ? ids[row] : row);
  }
};

// The k best hits so far; radius() is the distance a new hit must not exceed to enter.
class HitHeap {
 public:
  explicit HitHeap(int64_t k) : k_(static_cast<size_t>(k)) { hits_.reserve(k_); }
  float radius() const;
  void push(const MetricHit& hit);
  // The hits, best first (empties the heap).
  std::vector<MetricHit> take_sorted();

 private:
  size_t k_;
  std::vector<MetricHit> hits_;  // a max-heap by (distance, row)
};

class MetricMethod {
 public:
  explicit MetricMethod(Metric metric) : metric_(metric) {}
  virtual ~MetricMethod() = default;
  MetricMethod(const MetricMethod&) = delete;
  MetricMethod& operator=(const MetricMethod&) = delete;

  Metric metric() const { return metric_; }

  // Builds the tables over every object (replacing what was there).
  virtual void build(ThreadPool& pool, const Objects& objects) = 0;
  // Takes in rows first_row .. objects.n - 1, just appended to the objects.
  virtual void insert(ThreadPool& pool, const Objects& objects, int64_t first_row) = 0;
  // Forgets the given rows (sorted, distinct) and renumbers the rest as the objects were compacted.
  // Returns false when the tables cannot do without them (a centre or pivot): the index rebuilds.
  virtual bool erase(const std::vector<int64_t>& rows) = 0;

  // Appends to `hits` every allowed row within r (true units) of the query, in any order. Returns
  // the number of distances computed.
  virtual int64_t range(const QueryDistance& query, const Objects& objects, float r,
                        const RowAllowed& allowed, std::vector<MetricHit>& hits) const = 0;
  // Pushes candidates into `best` so that it ends with the k nearest allowed rows. Returns the
  // number of distances computed.
  virtual int64_t knn(const QueryDistance& query, const Objects& objects, const RowAllowed& allowed,
                      HitHeap& best) const = 0;

  virtual int64_t memory_bytes() const = 0;
  virtual void save(ByteWriter& out) const = 0;
  // Reads tables for `rows` objects; corrupt_data when they do not parse or do not fit the rows.
  virtual void load(ByteReader& in, int64_t rows) = 0;

 private:
  Metric metric_;
};

// Scans every row: the reference the pruning methods must equal.
class BruteForce final : public MetricMethod {
 public:
  using MetricMethod::MetricMethod;
  void build(ThreadPool&, const Objects&) override {}
  void insert(ThreadPool&, const Objects&, int64_t) override {}
  bool erase(const std::vector<int64_t>&) override { return true; }
  int64_t range(const QueryDistance& query, const Objects& objects, float r, const RowAllowed& allowed,
                std::vector<MetricHit>& hits) const override;
  int64_t knn(const QueryDistance& query, const Objects& objects, const RowAllowed& allowed,
              HitHeap& best) const override;
  int64_t memory_bytes() const override { return 0; }
  void save(ByteWriter&) const override {}
  void load(ByteReader&, int64_t) override {}
};

// Maps old rows to new after `erased` (sorted) rows are removed: -1 for an erased row.
std::vector<int64_t> renumbering(int64_t rows, const std::vector<int64_t>& erased);

}  // namespace quiver
