#include "cpp/graph/approximate_plan.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace quiver {

namespace {

// Short lists starve NN-descent of neighbours to join: small k builds keep this many.
constexpr int64_t kMinCapacity = 16;
// Points per inverted list: at equal candidates per point, small lists and more probes find more
// true neighbours than large lists and few probes (synth-100k-128, k = 32, no NN-descent: 64-point
// lists x 10 probes reach recall 0.987, 128 x 10: 0.953, 256 x 20: 0.914, 512 x 20: 0.888).
constexpr int64_t kPointsPerList = 64;
// k-means costs n x lists x dim: lists are capped at this many times sqrt(n) so that it stays a
// small share of the build as n grows (the exact graph costs n x n x dim).
constexpr double kListsPerSqrtN = 4;
// Inner products rank a point's neighbours by their norms as much as by their direction: NN-descent
// finds little through neighbours' neighbours, so the inverted file does more of the work.
constexpr int64_t kInnerProductProbes = 3;

// The knob. The probes set the inverted file's share of the work: on synth-100k-128 (k = 32, 2 CPU
// threads, intrinsic dimension 24) small lists alone reach each row's target (probes are cheap next
// to k-means). NN-descent then runs only while a control sample says the target is not met, which on
// data of higher intrinsic dimension (uniform noise) is where the recall comes from; its delta
// stops it once the lists no longer change.
struct Step {
  double target;   // the highest target_recall this row serves
  int64_t probes;
  int64_t iterations;
  int64_t sample;
  double delta;
};
constexpr Step kSteps[] = {
    {0.85, 3, 12, 8, 0.004},
    {0.90, 4, 12, 8, 0.002},
    {0.95, 10, 15, 8, 0.001},
    {0.98, 16, 15, 10, 0.0005},
    {1.00, 30, 20, 12, 0.0002},
};

}  // namespace

ApproximatePlan plan_approximate(Metric metric, int64_t n, int64_t k, double target_recall) {
  ApproximatePlan plan;
  plan.capacity = std::min(n - 1, std::max(k, kMinCapacity));
  plan.lists = std::max<int64_t>(
      1, std::min<int64_t>(n / kPointsPerList, static_cast<int64_t>(kListsPerSqrtN * std::sqrt(double(n)))));
  const Step* step = &kSteps[0];
  while (step->target < target_recall && step + 1 != std::end(kSteps)) ++step;
  plan.probes = metric == Metric::inner_product ? kInnerProductProbes * step->probes : step->probes;
  plan.iterations = step->iterations;
  plan.sample = step->sample;
  plan.delta = step->delta;
  return plan;
}

double exact_work_limit(bool gpu) {
  // CPU, measured (2 threads, k = 32, target 0.95, dim 128): exact vs approximate 0.7 vs 1.2 s CPU
  // time at n = 10k, 4.4 vs 4.7 s at 30k, 45 vs 8 s at 100k. GPU (both methods on the device; H200,
  // k = 64, dim 128, target 0.95): 0.26 vs 0.28 s at n = 100k, 0.74 vs 0.53 s at 300k, 4.4 vs 1.15 s
  // at 1M, so exact up to about 200k x 200k x 128.
  return gpu ? 5e12 : 1.2e11;
}

}  // namespace quiver
