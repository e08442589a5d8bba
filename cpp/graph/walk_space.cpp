#include "cpp/graph/walk_space.h"

#include <algorithm>

namespace quiver {

namespace {

// The directions' seed: fixed, so that the same rows always give the same directions.
constexpr uint64_t kWalkSeed = 0x3a1c5u;

}  // namespace

bool walks_projection(int64_t dim, Metric metric) {
  return dim >= kMinReducedInputDim && metric != Metric::inner_product;
}

ReducedSpace make_walk_space(ThreadPool& pool, const float* x, int64_t n, int64_t dim, Metric metric) {
  if (!walks_projection(dim, metric) || n <= 0) return ReducedSpace{};
  ReducedSpace space = principal_projection(pool, x, std::min(n, kWalkBasisRows), dim, kReducedDim, kWalkSeed);
  extend_reduced_space(pool, space, x, n, dim);
  return space;
}

WalkSpaceAppend walk_space_append(ThreadPool& pool, const ReducedSpace& space, const float* x, int64_t old_n,
                                  int64_t n, int64_t dim, Metric metric) {
  WalkSpaceAppend append;
  if (space.dim == 0 || space.basis_rows < std::min(n, kWalkBasisRows) ||
      static_cast<int64_t>(space.vectors.size()) != old_n * space.dim) {
    append.remade = true;
    append.space = make_walk_space(pool, x, n, dim, metric);
    return append;
  }
  // The new rows alone: a space of the same directions over rows [old_n, n).
  append.space.dim = space.dim;
  append.space.basis = space.basis;
  append.space.basis_rows = space.basis_rows;
  extend_reduced_space(pool, append.space, x + old_n * dim, n - old_n, dim);
  return append;
}

void apply_walk_space_append(ReducedSpace& space, WalkSpaceAppend&& append) {
  if (append.remade) {
    space = std::move(append.space);
    return;
  }
  space.vectors.insert(space.vectors.end(), append.space.vectors.begin(), append.space.vectors.end());
}

}  // namespace quiver
