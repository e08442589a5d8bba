#include "eval.h"

#include <algorithm>

#include "errors.h"
#include "progress.h"

namespace qvtool {

// Chunks small enough for a lively progress line, large enough to keep the library's GEMM efficient.
constexpr int64_t kMinChunk = 256, kMaxChunk = 4096;

IdMatrix exact_knn(Context &ctx, qv_metric_t metric, const FloatMatrix &base,
                   const FloatMatrix &queries, int64_t k) {
  IdMatrix ids;
  ids.rows = queries.rows;
  ids.cols = k;
  ids.data.resize(size_t(ids.rows * k));
  const int64_t chunk = std::clamp(queries.rows / 20, kMinChunk, kMaxChunk);
  std::vector<float> dist(size_t(std::min(chunk, queries.rows) * k));
  Progress progress("exact ground truth", queries.rows);
  for (int64_t q0 = 0; q0 < queries.rows; q0 += chunk) {
    const int64_t nq = std::min(chunk, queries.rows - q0);
    check(qv_knn(ctx.get(), metric, base.cols, base.rows, base.data.data(), nq, queries.row(q0),
                 uint32_t(k), nullptr, dist.data(), ids.row(q0)),
          "computing exact ground truth (qv_knn)");
    progress.update(q0 + nq);
  }
  progress.done();
  return ids;
}

double recall_at(const int64_t *ids, int64_t rows, int64_t k, const IdMatrix &truth, int64_t r) {
  if (r > k || r > truth.cols || rows > truth.rows)
    throw Failure("recall@" + std::to_string(r) + " needs " + std::to_string(r) +
                  " results and ground-truth neighbours per query");
  if (rows == 0) return 0.0;
  int64_t hits = 0;
  std::vector<int64_t> want(static_cast<size_t>(r));
  for (int64_t i = 0; i < rows; ++i) {
    std::copy(truth.row(i), truth.row(i) + r, want.begin());
    std::sort(want.begin(), want.end());
    for (int64_t j = 0; j < r; ++j) {
      const int64_t id = ids[i * k + j];
      if (id >= 0 && std::binary_search(want.begin(), want.end(), id)) ++hits;
    }
  }
  return double(hits) / double(rows * r);
}

double recall_at(const IdMatrix &result, const IdMatrix &truth, int64_t r) {
  return recall_at(result.data.data(), result.rows, result.cols, truth, r);
}

void require_dim(const FloatMatrix &m, int64_t dim, const std::string &what) {
  if (m.cols != dim)
    throw UsageError(what + " has dimension " + std::to_string(m.cols) + ", the index has " +
                     std::to_string(dim));
}

}  // namespace qvtool
