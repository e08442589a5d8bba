// The space the CPU search of a graph index walks for wide vectors: their projection on the top
// principal directions (reduced_space.h, 128 of them), a fraction of the bytes a distance reads. The
// walk's candidates are re-ranked with exact distances on the full vectors (graph_search.h), so the
// results and distances are exact for the rows found. Fashion-MNIST (784 floats), Graph32, 2 threads:
// 2.2x the QPS at recall@10 0.96 and 1.8x at 0.99 of walking the full vectors. Narrower vectors walk
// themselves: 128 floats projected on 64 directions gave the same recall at the same QPS (synthetic
// 1M x 128).
//
// The directions come from the first kWalkBasisRows rows only, so appending rows (inserts) leaves
// them unchanged and only the new rows are projected; a rebuild or a load makes them again from the
// rows then stored, which gives the same directions for the same rows: a saved and reloaded index
// answers exactly as the original.
#pragma once

#include <cstdint>

#include "cpp/core/metric.h"
#include "cpp/graph/reduced_space.h"

namespace quiver {

class ThreadPool;

constexpr int64_t kWalkBasisRows = 65536;

// Whether a graph of such vectors walks a projection: wide enough, and a metric the projection's
// L2 orders (L2, cosine on normalised vectors; not inner product, where norms rank too).
bool walks_projection(int64_t dim, Metric metric);

// The walk space of x (n x dim), or an empty one (dim 0) when walks_projection is false.
ReducedSpace make_walk_space(ThreadPool& pool, const float* x, int64_t n, int64_t dim, Metric metric);

// What appending rows [old_n, n) of x to the rows `space` was made for does to it: when its
// directions stay, the new rows' projections (remade false, space.vectors only); else a new space
// (remade true). `space` itself is not changed.
struct WalkSpaceAppend {
  bool remade = false;
  ReducedSpace space;
};
WalkSpaceAppend walk_space_append(ThreadPool& pool, const ReducedSpace& space, const float* x, int64_t old_n,
                                  int64_t n, int64_t dim, Metric metric);

// Applies an append to the space it was computed from. Allocates nothing (cannot throw) when the
// space's vectors have the capacity for the new rows (reserve them before the change it belongs to).
void apply_walk_space_append(ReducedSpace& space, WalkSpaceAppend&& append);

}  // namespace quiver
