// Progress of a k-NN graph build, reported to the caller's callback between pieces of work. A build
// runs in phases (k-means, candidate lists, refinement, recall estimate); each phase reports its own
// fraction done and this maps it onto the whole build's 0 .. 1. A callback returning false stops the
// build: report() throws Status::cancelled, and every buffer the build holds is released by
// unwinding.
#pragma once

#include <algorithm>

#include "cpp/core/error.h"
#include "cpp/graph/knn_graph.h"

namespace quiver {

class BuildProgress {
 public:
  explicit BuildProgress(const ProgressFn& callback) : callback_(callback) {}

  // The share of the whole build that the next reports cover: [begin, end].
  void phase(double begin, double end) {
    begin_ = begin;
    end_ = end;
  }

  // fraction: of the current phase, 0 .. 1. Call from the thread that called knn_graph only, so a
  // callback never runs on a pool thread (bindings call back into Go and Rust from it).
  void report(double fraction) const {
    if (!callback_) return;
    const double f = begin_ + (end_ - begin_) * std::clamp(fraction, 0.0, 1.0);
    if (!callback_(f)) fail(Status::cancelled, "knn_graph: cancelled by the progress callback");
  }

 private:
  const ProgressFn& callback_;
  double begin_ = 0, end_ = 1;
};

}  // namespace quiver
