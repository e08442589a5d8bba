// How good an approximate k-NN graph is: its recall@k against exact neighbours, measured on a
// seeded sample of its points. The sample's exact neighbours are computed once; the recall of any
// number of graphs (or of the lists being refined) is then cheap to measure.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/core/metric.h"

namespace quiver {

class ExactNeighbours;
class NeighbourLists;

class RecallSample {
 public:
  // x: the prepared n x dim host rows that `exact` searches. `sample` distinct points (all n if
  // sample >= n), chosen by the seed.
  RecallSample(ExactNeighbours& exact, Metric metric, int64_t dim, int64_t n, const float* x, int64_t k,
               int64_t sample, uint64_t seed);

  // The mean over the sample of the share of a point's k graph neighbours that are among its exact
  // k nearest other points; a neighbour tied with the exact k-th distance counts as found.
  // neighbours, distances: n x k, distances in the metric's units.
  double recall(const int32_t* neighbours, const float* distances) const;
  // The same for the first k entries of each list.
  double recall(const NeighbourLists& lists) const;
  // The sample's points, in the order recall_of_sample reads their neighbours.
  const std::vector<int64_t>& points() const { return points_; }
  // Their vectors, points().size() x dim (prepared as x).
  const std::vector<float>& point_vectors() const { return point_vectors_; }
  // The same for neighbours and distances of the sample's points only: points().size() x k, row q
  // points()[q]'s.
  double recall_of_sample(const int32_t* neighbours, const float* distances) const;

 private:
  // get(q, j): the j-th neighbour (id, distance) of the sample's q-th point.
  template <typename Get>
  double measure(Get get) const;

  Metric metric_;
  int64_t k_;
  std::vector<int64_t> points_;
  std::vector<float> point_vectors_;
  std::vector<int64_t> truth_;  // points x k exact neighbours
  std::vector<float> kth_;      // each point's exact k-th distance
};

}  // namespace quiver
