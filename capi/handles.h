// What the opaque C handles hold.
#pragma once

#include <memory>

#include "cpp/core/context.h"
#include "cpp/exact/range.h"
#include "cpp/index/index.h"

// Indexes share ownership of their context, so freeing a context before its indexes (as garbage
// collectors in the bindings may do) is safe: it goes when the last of them goes.
struct qv_context {
  std::shared_ptr<quiver::Context> context;
};

struct qv_index {
  std::shared_ptr<quiver::Context> context;  // declared first: outlives `index`
  std::unique_ptr<quiver::Index> index;
};

struct qv_range_result {
  quiver::RangeResult result;
};
