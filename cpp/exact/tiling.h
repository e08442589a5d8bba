// Tile sizes of the CPU exact search, and the loop that produces distance tiles.
#pragma once

#include <cstdint>
#include <functional>

#include "cpp/exact/database.h"

namespace quiver {

// Queries per GEMM tile: enough rows to amortise OpenBLAS's packing of the database block.
constexpr int64_t kQueryBlock = 128;
// Database rows per tile; a 128 x 1024 float tile (512 KB) stays in a core's L2 cache while scanned.
constexpr int64_t kDatabaseBlock = 1024;

// A unit of parallel work: a block of queries against a contiguous range of database rows.
struct TileTask {
  int64_t query_begin, query_end;
  int64_t row_begin, row_end;
};

// Splits the work: one task per query block when there are many queries; with few queries, the
// database is split too so every thread has work. Depends on the sizes only, never on the thread
// count, so results are the same for every thread count. max_chunks bounds the per-chunk state the
// caller keeps.
struct TilePlan {
  int64_t query_blocks;
  int64_t row_chunks;
  int64_t chunk_rows;
  TileTask task(int64_t t, int64_t nq, int64_t n) const;
  int64_t tasks() const { return query_blocks * row_chunks; }
};
TilePlan plan_tiles(int64_t nq, int64_t n, int64_t max_chunks);

// For each database block of the task, computes the tile alpha * Q Y^T into `tile` and calls
// visit(query_row, tile_row, row_begin, rows) for each query of the task. alpha is -2 for L2 (so that
// key = tile + ||y||^2) and -1 for inner products (key = -<q, y>).
void for_each_tile(const Database& db, const Queries& queries, const TileTask& task, float* tile,
                   const std::function<void(int64_t q, const float* row, int64_t row_begin,
                                            int64_t rows)>& visit);

inline float tile_alpha(Metric metric) { return metric == Metric::l2 ? -2.0f : -1.0f; }

}  // namespace quiver
