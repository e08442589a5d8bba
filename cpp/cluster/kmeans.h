// k-means (Lloyd) on the CPU: assignment through the exact k-NN engine (k = 1), deterministic
// parallel centroid update, empty clusters re-seeded by splitting large ones.
#pragma once

#include <cstdint>

#include "cpp/core/progress.h"

namespace quiver {

class ThreadPool;

struct KmeansOptions {
  int64_t iterations = 20;
  uint64_t seed = 1234;
  int64_t max_points_per_centroid = 256;  // 0: train on every point
  // Reports the iterations done after each (cpp/core/progress.h); may be empty.
  ProgressFn progress;
};

struct KmeansResult {
  double objective = 0;  // sum of squared distances of every point to its nearest centroid
};

// x: n x dim, finite; centroids: k x dim, written; assignments: n entries or nullptr.
KmeansResult kmeans(ThreadPool& pool, int64_t dim, int64_t n, const float* x, int64_t k,
                    const KmeansOptions& options, float* centroids, int64_t* assignments);

}  // namespace quiver
