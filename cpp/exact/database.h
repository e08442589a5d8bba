// A read-only view of the vectors an exact search runs over.
#pragma once

#include <cstdint>

#include "cpp/core/metric.h"
#include "cpp/select/topk.h"

namespace quiver {

class ThreadPool;

struct Database {
  const float* x = nullptr;      // n x dim, row-major (normalised rows for cosine)
  const float* norms = nullptr;  // n squared norms; required for L2, unused otherwise
  int64_t n = 0;
  int64_t dim = 0;
  const int64_t* ids = nullptr;  // row -> id; nullptr: ids are row numbers
  Metric metric = Metric::l2;
};

// The search-time inputs common to k-NN and range search.
struct Queries {
  const float* x = nullptr;  // nq x dim, finite, normalised for cosine
  int64_t nq = 0;
};

}  // namespace quiver
