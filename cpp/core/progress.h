// Progress of a long call (a k-NN graph, a graph index's build), reported to the caller's callback
// between pieces of work (qv_progress_fn_t). A call runs in phases; each reports its own fraction
// done, which Progress maps onto the whole call's 0 .. 1. A callback returning false stops the
// call: report() throws Status::cancelled, and unwinding releases what the call holds.
#pragma once

#include <algorithm>
#include <functional>

#include "cpp/core/error.h"

namespace quiver {

// Called with the fraction of a call done (0 .. 1, non-decreasing); false asks the call to stop.
// Called on the thread that made the call, never on a pool thread, so that a binding may call back
// into its own runtime.
using ProgressFn = std::function<bool(double fraction)>;

class Progress {
 public:
  // callback may be empty (no reports); what names the call in the cancellation's message. Both
  // are borrowed for the object's lifetime.
  Progress(const ProgressFn& callback, const char* what) : callback_(callback), what_(what) {}

  // The share of the whole call that the next reports cover: [begin, end].
  void phase(double begin, double end) {
    begin_ = begin;
    end_ = end;
  }

  // fraction: of the current phase, 0 .. 1. From the calling thread only.
  void report(double fraction) const { reach(whole(fraction)); }

  // whole: of the whole call, reached at the end of a step that reports nothing itself.
  void reach(double whole_fraction) const {
    if (callback_ && !callback_(whole_fraction)) fail(Status::cancelled, what_, ": cancelled by the progress callback");
  }

  // A callback for a call made inside this one (a k-NN graph inside a graph build): its fractions
  // mapped onto the current phase. Empty when this has no callback; valid while this lives and the
  // phase stays.
  ProgressFn nested() const {
    if (!callback_) return {};
    return [this](double fraction) { return callback_(whole(fraction)); };
  }

 private:
  // A fraction of the current phase as a fraction of the whole call.
  double whole(double fraction) const { return begin_ + (end_ - begin_) * std::clamp(fraction, 0.0, 1.0); }

  const ProgressFn& callback_;
  const char* what_;
  double begin_ = 0, end_ = 1;
};

}  // namespace quiver
