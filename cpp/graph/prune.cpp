#include "cpp/graph/prune.h"

#include <algorithm>

namespace quiver {

namespace {

// Points per parallel task: enough work to amortise scheduling, small enough to balance 2+ threads.
constexpr int64_t kRowsPerTask = 128;
// Reverse edges a point considers at most (the closest): hubs chosen by thousands of points would
// otherwise make its pruning quadratic.
constexpr int64_t kReverseCapFactor = 2;

// work(begin, end) over pieces of first .. last - 1, in parallel.
void for_rows(ThreadPool& pool, int64_t first, int64_t last, const std::function<void(int64_t, int64_t)>& work) {
  const int64_t tasks = (last - first + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(tasks, [&](int64_t t) {
    work(first + t * kRowsPerTask, std::min(last, first + (t + 1) * kRowsPerTask));
  });
}

// Sorts a candidate list by key, without p and without repeated rows. A row may come twice (from
// the k-NN list and from a search or a reverse edge) with keys that differ in the last bits
// (computed in either direction or by another kernel): the smaller is kept.
void sort_unique(std::vector<Neighbour>& list, int32_t p) {
  std::sort(list.begin(), list.end(),
            [](const Neighbour& a, const Neighbour& b) { return a.row < b.row || (a.row == b.row && a.key < b.key); });
  list.erase(std::unique(list.begin(), list.end(), [](const Neighbour& a, const Neighbour& b) { return a.row == b.row; }),
             list.end());
  list.erase(std::remove_if(list.begin(), list.end(), [p](const Neighbour& c) { return c.row == p || c.row < 0; }),
             list.end());
  std::sort(list.begin(), list.end());
}

}  // namespace

int32_t prune_candidates(const PruneSpace& space, const Neighbour* candidates, int64_t n_candidates,
                         const PruneParams& params, int32_t* out, std::vector<uint8_t>& kept) {
  const float alpha = space.l2_keys ? params.alpha : 1.0f;
  kept.assign(static_cast<size_t>(n_candidates), 0);
  int32_t n_out = 0;
  for (int64_t i = 0; i < n_candidates && n_out < params.degree; ++i) {
    const float* c = space.vectors + candidates[i].row * space.dim;
    bool occluded = false;
    for (int32_t s = 0; s < n_out && !occluded; ++s)
      occluded = alpha * space.key(space.vectors + static_cast<int64_t>(out[s]) * space.dim, c, space.dim) <
                 candidates[i].key;
    if (occluded) continue;
    out[n_out++] = candidates[i].row;
    kept[static_cast<size_t>(i)] = 1;
  }
  if (params.fill)
    for (int64_t i = 0; i < n_candidates && n_out < params.degree; ++i)
      if (!kept[static_cast<size_t>(i)]) out[n_out++] = candidates[i].row;
  return n_out;
}

FixedDegreeGraph choose_rows(ThreadPool& pool, const PruneSpace& space, int64_t n, const CandidateFn& candidates,
                             const PruneParams& params) {
  FixedDegreeGraph chosen(n, params.degree);
  choose_rows(pool, space, 0, n, candidates, params, chosen);
  return chosen;
}

void choose_rows(ThreadPool& pool, const PruneSpace& space, int64_t first, int64_t last,
                 const CandidateFn& candidates, const PruneParams& params, FixedDegreeGraph& chosen) {
  PruneParams no_fill = params;
  no_fill.fill = false;  // only chosen edges are reversed
  for_rows(pool, first, last, [&](int64_t begin, int64_t end) {
    std::vector<Neighbour> list;
    std::vector<uint8_t> kept;
    BeamScratch scratch;
    for (int64_t p = begin; p < end; ++p) {
      list.clear();
      candidates(p, list, scratch);
      sort_unique(list, static_cast<int32_t>(p));
      prune_candidates(space, list.data(), static_cast<int64_t>(list.size()), no_fill, chosen.row(p), kept);
    }
  });
}

FixedDegreeGraph merge_reverse_edges(ThreadPool& pool, const PruneSpace& space, const FixedDegreeGraph& chosen,
                                     const int32_t* knn, const float* keys, int64_t k, const PruneParams& params) {
  const int64_t n = chosen.rows;
  const int32_t degree = chosen.degree;
  // Reverse edges as lists of sources per target (CSR).
  std::vector<int64_t> offsets(static_cast<size_t>(n + 1), 0);
  for (int64_t p = 0; p < n; ++p)
    for (int32_t j = 0; j < degree && chosen.row(p)[j] != kEmptySlot; ++j) ++offsets[chosen.row(p)[j] + 1];
  for (int64_t q = 0; q < n; ++q) offsets[q + 1] += offsets[q];
  std::vector<int32_t> reverse(static_cast<size_t>(offsets[n]));
  {
    std::vector<int64_t> next(offsets.begin(), offsets.end() - 1);
    for (int64_t p = 0; p < n; ++p)
      for (int32_t j = 0; j < degree && chosen.row(p)[j] != kEmptySlot; ++j)
        reverse[static_cast<size_t>(next[chosen.row(p)[j]]++)] = static_cast<int32_t>(p);
  }

  FixedDegreeGraph graph(n, degree);
  const int64_t reverse_cap = kReverseCapFactor * degree;
  for_rows(pool, 0, n, [&](int64_t begin, int64_t end) {
    std::vector<Neighbour> list, rev;
    std::vector<uint8_t> kept;
    for (int64_t q = begin; q < end; ++q) {
      const float* y = space.vectors + q * space.dim;
      auto key_of = [&](int32_t r) { return space.key(y, space.vectors + static_cast<int64_t>(r) * space.dim, space.dim); };
      list.clear();
      for (int64_t j = 0; j < k; ++j)
        if (knn[q * k + j] >= 0) list.push_back({keys[q * k + j], knn[q * k + j]});
      for (int32_t j = 0; j < degree && chosen.row(q)[j] != kEmptySlot; ++j)
        list.push_back({key_of(chosen.row(q)[j]), chosen.row(q)[j]});
      rev.clear();
      for (int64_t i = offsets[q]; i < offsets[q + 1]; ++i) rev.push_back({key_of(reverse[i]), reverse[i]});
      if (static_cast<int64_t>(rev.size()) > reverse_cap) {
        std::partial_sort(rev.begin(), rev.begin() + reverse_cap, rev.end());
        rev.resize(static_cast<size_t>(reverse_cap));
      }
      list.insert(list.end(), rev.begin(), rev.end());
      sort_unique(list, static_cast<int32_t>(q));
      prune_candidates(space, list.data(), static_cast<int64_t>(list.size()), params, graph.row(q), kept);
    }
  });
  return graph;
}

}  // namespace quiver
