#include "index_build.h"

#include <algorithm>

#include "errors.h"
#include "progress.h"
#include "timing.h"

namespace qvtool {

// Adds go in chunks only so progress can be shown; big enough that per-call overhead is noise.
constexpr int64_t kAddChunkRows = 1 << 16;

namespace {

// The add in flight, for the library's progress reports within it (a graph index's build).
struct AddInFlight {
  Progress *bar;
  int64_t first, rows;
};

int draw_add_progress(double fraction, void *user) {
  const auto *add = static_cast<const AddInFlight *>(user);
  add->bar->update(add->first + int64_t(fraction * double(add->rows)));
  return 0;
}

}  // namespace

BuiltIndex build_index(Context &ctx, const std::string &descriptor, qv_metric_t metric,
                       const FloatMatrix &base, int64_t train_rows) {
  if (base.rows == 0) throw Failure("the base set is empty");
  BuiltIndex b;
  b.index = Index::create(ctx, descriptor, base.cols, metric);

  const int64_t ntrain = std::min(train_rows, base.rows);
  Stopwatch train_clock;
  {
    Progress bar("training \"" + descriptor + "\" on " + std::to_string(ntrain) + " vectors", kFractionSteps);
    check(qv_index_set_progress(b.index.get(), draw_fraction, &bar), "setting the progress callback");
    check(qv_index_train(b.index.get(), ntrain, base.data.data()), "training \"" + descriptor + "\"");
    bar.done();
  }
  b.train_s = train_clock.seconds();

  Stopwatch add_clock;
  Progress progress("adding vectors", base.rows);
  // A graph index builds its graph from the first add and inserts later ones one at a time: one
  // add of everything is its build.
  const int64_t chunk = descriptor.rfind("Graph", 0) == 0 ? base.rows : kAddChunkRows;
  AddInFlight add{&progress, 0, 0};
  check(qv_index_set_progress(b.index.get(), draw_add_progress, &add), "setting the progress callback");
  for (int64_t r0 = 0; r0 < base.rows; r0 += chunk) {
    const int64_t n = std::min(chunk, base.rows - r0);
    add.first = r0;
    add.rows = n;
    check(qv_index_add(b.index.get(), n, base.row(r0), nullptr),
          "adding vectors " + std::to_string(r0) + ".." + std::to_string(r0 + n - 1));
  }
  check(qv_index_set_progress(b.index.get(), nullptr, nullptr), "removing the progress callback");
  progress.done();
  b.add_s = add_clock.seconds();
  return b;
}

}  // namespace qvtool
