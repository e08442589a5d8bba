#include "cpp/exact/knn.h"

#include <algorithm>
#include <vector>

#include "cpp/core/thread_pool.h"
#include "cpp/exact/rerank.h"
#include "cpp/exact/tiling.h"

namespace quiver {

namespace {

// Candidates kept beyond k and re-ranked with exact distances: the GEMM form ||y||^2 - 2<q,y> loses
// precision when norms are large, and a few spare candidates absorb the resulting swaps at the k-th
// place.
constexpr int64_t kRerankMargin = 8;
// Bound on the memory of the candidate lists of one batch of queries.
constexpr int64_t kCandidateBudgetBytes = int64_t{64} << 20;
constexpr int64_t kBytesPerCandidate = sizeof(float) + sizeof(int64_t);
// Queries per task of the merge and re-rank step.
constexpr int64_t kRerankBlock = 64;

void select_batch(ThreadPool& pool, const Database& db, const Queries& queries, int64_t k,
                  int64_t kc, const IdFilter& filter, float* distances, int64_t* ids) {
  const int64_t nq = queries.nq;
  const int64_t max_chunks =
      std::max<int64_t>(1, kCandidateBudgetBytes / (std::max<int64_t>(1, nq) * kc * kBytesPerCandidate));
  const TilePlan plan = plan_tiles(nq, db.n, max_chunks);
  const int64_t chunks = plan.row_chunks;
  std::vector<float> keys(nq * chunks * kc);
  std::vector<int64_t> rows(nq * chunks * kc);
  std::vector<int64_t> counts(nq * chunks);
  const IdFilter* active_filter = filter.bits ? &filter : nullptr;
  const ScanFn scan = best_scan();

  pool.parallel_for(plan.tasks(), [&](int64_t t) {
    const TileTask task = plan.task(t, nq, db.n);
    const int64_t chunk = t % chunks;
    std::vector<TopK> heaps;
    heaps.reserve(task.query_end - task.query_begin);
    for (int64_t q = task.query_begin; q < task.query_end; ++q) {
      const int64_t slot = (q * chunks + chunk) * kc;
      heaps.emplace_back(kc, &keys[slot], &rows[slot], active_filter, db.ids);
    }
    std::vector<float> tile(kQueryBlock * kDatabaseBlock);
    const float* bias = db.metric == Metric::l2 ? db.norms : nullptr;
    for_each_tile(db, queries, task, tile.data(),
                  [&](int64_t q, const float* row, int64_t row_begin, int64_t count) {
                    scan(row, bias ? bias + row_begin : nullptr, count, row_begin,
                         heaps[q - task.query_begin].sink());
                  });
    for (int64_t q = task.query_begin; q < task.query_end; ++q)
      counts[q * chunks + chunk] = heaps[q - task.query_begin].size();
  });

  const int64_t blocks = (nq + kRerankBlock - 1) / kRerankBlock;
  pool.parallel_for(blocks, [&](int64_t b) {
    std::vector<Candidate> candidates;
    for (int64_t q = b * kRerankBlock; q < std::min(nq, (b + 1) * kRerankBlock); ++q) {
      candidates.clear();
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const int64_t slot = (q * chunks + chunk) * kc;
        for (int64_t i = 0; i < counts[q * chunks + chunk]; ++i) candidates.push_back({0, rows[slot + i]});
      }
      write_reranked(db, queries.x + q * db.dim, candidates, k, distances + q * k, ids + q * k);
    }
  });
}

}  // namespace

void exact_knn(ThreadPool& pool, const Database& db, const Queries& queries, int64_t k,
               const IdFilter& filter, float* distances, int64_t* ids) {
  const int64_t kc = std::min(db.n, k + kRerankMargin);
  if (kc == 0) {
    std::fill(distances, distances + queries.nq * k, missing_distance(db.metric));
    std::fill(ids, ids + queries.nq * k, int64_t{-1});
    return;
  }
  // Queries are taken in batches whose candidate lists fit the budget (large k).
  int64_t batch = kCandidateBudgetBytes / (kc * kBytesPerCandidate);
  batch = std::max(kQueryBlock, batch / kQueryBlock * kQueryBlock);
  for (int64_t q0 = 0; q0 < queries.nq; q0 += batch) {
    Queries part{queries.x + q0 * db.dim, std::min(batch, queries.nq - q0)};
    select_batch(pool, db, part, k, kc, filter, distances + q0 * k, ids + q0 * k);
  }
}

}  // namespace quiver
