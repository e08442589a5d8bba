#include "cpp/index/ivf_probe.h"

#include <algorithm>

namespace quiver {

namespace {
// Bound on the probe lists (list and distance) of one batch of queries, and on the batch size.
constexpr int64_t kProbeBudgetBytes = int64_t{64} << 20;
constexpr int64_t kMaxProbeBatch = 16384;
}  // namespace

void write_results(Metric metric, std::vector<Candidate>& found, int64_t k, float* distances, int64_t* ids) {
  const int64_t count = std::min<int64_t>(k, static_cast<int64_t>(found.size()));
  std::partial_sort(found.begin(), found.begin() + count, found.end());
  const bool l2 = metric == Metric::l2;
  for (int64_t i = 0; i < k; ++i) {
    if (i < count) {
      distances[i] = l2 ? found[i].key : -found[i].key;
      ids[i] = found[i].index;
    } else {
      distances[i] = missing_distance(metric);
      ids[i] = -1;
    }
  }
}

void for_each_probe_batch(
    ThreadPool& pool, const IvfModel& model, int64_t nq, const float* queries, int64_t nprobe,
    const std::function<void(int64_t first, int64_t count, const float* coarse_distances, const int64_t* probes)>&
        visit) {
  const int64_t per_query = nprobe * static_cast<int64_t>(sizeof(float) + sizeof(int64_t));
  const int64_t batch = std::max<int64_t>(1, std::min(kMaxProbeBatch, kProbeBudgetBytes / per_query));
  std::vector<float> coarse;
  std::vector<int64_t> probes;
  for (int64_t q0 = 0; q0 < nq; q0 += batch) {
    const int64_t count = std::min(batch, nq - q0);
    coarse.resize(static_cast<size_t>(count * nprobe));
    probes.resize(static_cast<size_t>(count * nprobe));
    probe_lists(model, pool, count, queries + q0 * model.dim, nprobe, coarse.data(), probes.data());
    visit(q0, count, coarse.data(), probes.data());
  }
}

}  // namespace quiver
