// The host-side steps k-means shares between the CPU and the GPU trainers, so that a seed picks the
// same sample, the same initial centroids and the same splits on either.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/core/random.h"

namespace quiver {

class ThreadPool;

// Picks m distinct indices of [0, n) (partial Fisher-Yates), in a seeded order.
std::vector<int64_t> sample_indices(int64_t n, int64_t m, Random& random);

// Gives each empty cluster (counts[c] == 0) half of a large one, chosen with probability proportional
// to its size: the donor's centroid is nudged apart into two. centroids: k x dim, host memory.
void split_empty(int64_t dim, int64_t k, std::vector<int64_t>& counts, float* centroids, Random& random);

// Lloyd's update: each centroid becomes the mean of its points (labels: n cluster numbers < k). A
// centroid's points are summed in double in index order by one task, so the result is the same for
// every thread count, and nothing larger than the points' order is allocated.
// Clusters without points keep their centroid (left for split_empty). Returns each one's point count.
// Instantiated for int64_t (k-means) and uint8_t (PQ sub-space) labels.
template <typename Label>
std::vector<int64_t> update_centroids(ThreadPool& pool, int64_t dim, int64_t n, const float* x, int64_t k,
                                      const Label* labels, float* centroids);

}  // namespace quiver
