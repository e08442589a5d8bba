#include "cpp/exact/tiling.h"

#include <algorithm>

#include "cpp/blas/gemm.h"

namespace quiver {

namespace {
// With fewer query blocks than this, the database is split as well.
constexpr int64_t kSplitBelowQueryBlocks = 4;
constexpr int64_t kMaxRowChunks = 16;
}  // namespace

TilePlan plan_tiles(int64_t nq, int64_t n, int64_t max_chunks) {
  TilePlan plan;
  plan.query_blocks = (nq + kQueryBlock - 1) / kQueryBlock;
  const int64_t db_blocks = std::max<int64_t>(1, (n + kDatabaseBlock - 1) / kDatabaseBlock);
  plan.row_chunks = 1;
  if (plan.query_blocks < kSplitBelowQueryBlocks)
    plan.row_chunks = std::max<int64_t>(1, std::min({kMaxRowChunks, db_blocks, max_chunks}));
  const int64_t blocks_per_chunk = (db_blocks + plan.row_chunks - 1) / plan.row_chunks;
  plan.chunk_rows = blocks_per_chunk * kDatabaseBlock;
  plan.row_chunks = std::max<int64_t>(1, (n + plan.chunk_rows - 1) / plan.chunk_rows);
  return plan;
}

TileTask TilePlan::task(int64_t t, int64_t nq, int64_t n) const {
  const int64_t qb = t / row_chunks, chunk = t % row_chunks;
  TileTask task;
  task.query_begin = qb * kQueryBlock;
  task.query_end = std::min(nq, task.query_begin + kQueryBlock);
  task.row_begin = chunk * chunk_rows;
  task.row_end = std::min(n, task.row_begin + chunk_rows);
  return task;
}

void for_each_tile(const Database& db, const Queries& queries, const TileTask& task, float* tile,
                   const std::function<void(int64_t q, const float* row, int64_t row_begin,
                                            int64_t rows)>& visit) {
  const int64_t m = task.query_end - task.query_begin;
  const float alpha = tile_alpha(db.metric);
  for (int64_t r0 = task.row_begin; r0 < task.row_end; r0 += kDatabaseBlock) {
    const int64_t rows = std::min(kDatabaseBlock, task.row_end - r0);
    gemm_abt(m, rows, db.dim, alpha, queries.x + task.query_begin * db.dim, db.dim,
             db.x + r0 * db.dim, db.dim, tile, rows);
    for (int64_t q = 0; q < m; ++q) visit(task.query_begin + q, tile + q * rows, r0, rows);
  }
}

}  // namespace quiver
