// Creating, training and filling an index from a base set: shared by `build` and `bench`, which must
// report build time the same way (train + add, adds in chunks with progress).
#pragma once

#include <string>

#include "library.h"
#include "matrix.h"

namespace qvtool {

struct BuiltIndex {
  Index index;
  double train_s = 0, add_s = 0;
  double build_s() const { return train_s + add_s; }
};

// Trains on the first train_rows base rows (all when train_rows >= base.rows), then adds every row.
BuiltIndex build_index(Context &ctx, const std::string &descriptor, qv_metric_t metric,
                       const FloatMatrix &base, int64_t train_rows = kAllRows);

}  // namespace qvtool
