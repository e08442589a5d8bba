#include "cpp/graph/beam_search.h"

#include <algorithm>

#include "cpp/core/prefetch.h"

namespace quiver {

namespace {

// The first lines of a neighbour's vector are prefetched while the keys of the kPrefetchAhead
// neighbours before it are computed; the hardware prefetcher follows the sequential reads from there.
// Prefetching whole vectors (of Fashion-MNIST's 3 KiB) was 3x slower: the prefetches fill the
// processor's miss buffers and stall. Measured on Fashion-MNIST (AVX2 EPYC, 2 threads). 4 ahead,
// not 2, 8 or 16, and the first line only, not 2: 4% more queries a second on synthetic 1M x 128
// (Graph32, widths 14 .. 40, AVX-512 EPYC, 2 threads).
constexpr int64_t kMaxPrefetchBytes = 64;
constexpr int64_t kPrefetchAhead = 4;

inline void prefetch_vector(const float* v, int64_t dim) {
  prefetch_bytes(v, std::min(dim * static_cast<int64_t>(sizeof(float)), kMaxPrefetchBytes));
}

// Inserts c into the sorted list[0, size) of at most capacity entries (dropping the worst when
// full); returns its position, or capacity when it does not get in. flags (may be null) moves with
// the entries and the new entry's flag is 0.
inline int64_t insert_sorted(Neighbour* list, uint8_t* flags, int64_t& size, int64_t capacity, Neighbour c) {
  if (size == capacity && !(c < list[size - 1])) return capacity;
  int64_t pos = size < capacity ? size : capacity - 1;
  while (pos > 0 && c < list[pos - 1]) {
    list[pos] = list[pos - 1];
    if (flags != nullptr) flags[pos] = flags[pos - 1];
    --pos;
  }
  list[pos] = c;
  if (flags != nullptr) flags[pos] = 0;
  if (size < capacity) ++size;
  return pos;
}

}  // namespace

void beam_search(const GraphView& view, const float* query, const int32_t* entries, int64_t n_entries,
                 int64_t width, int64_t k, const RowFilter* filter, BeamScratch& scratch,
                 std::vector<Neighbour>& out, std::vector<Neighbour>* seen) {
  const FixedDegreeGraph& g = *view.graph;
  const int64_t dim = view.dim;
  const float* vectors = view.vectors;
  const KeyFn key = view.key;
  width = std::max<int64_t>(width, 1);
  k = std::max<int64_t>(k, 1);
  const bool filtered = filter != nullptr && filter->active();

  scratch.visited.begin(g.rows);
  if (static_cast<int64_t>(scratch.pool.size()) < width) {
    scratch.pool.resize(static_cast<size_t>(width));
    scratch.expanded.resize(static_cast<size_t>(width));
  }
  if (filtered && static_cast<int64_t>(scratch.accepted.size()) < k) scratch.accepted.resize(static_cast<size_t>(k));
  if (static_cast<int64_t>(scratch.fresh.size()) < g.degree) scratch.fresh.resize(static_cast<size_t>(g.degree));
  Neighbour* pool = scratch.pool.data();
  uint8_t* expanded = scratch.expanded.data();
  Neighbour* accepted = scratch.accepted.data();
  int32_t* fresh = scratch.fresh.data();
  VisitedSet& visited = scratch.visited;
  int64_t size = 0;
  int64_t n_accepted = 0;
  if (seen != nullptr) seen->clear();

  auto offer = [&](int32_t row) -> int64_t {
    const Neighbour c{key(query, vectors + row * dim, dim), row};
    if (seen != nullptr) seen->push_back(c);
    if (filtered && filter->allows(row)) insert_sorted(accepted, nullptr, n_accepted, k, c);
    return insert_sorted(pool, expanded, size, width, c);
  };

  for (int64_t e = 0; e < n_entries; ++e)
    if (entries[e] >= 0 && entries[e] < g.rows && !visited.test_and_set(entries[e])) offer(entries[e]);

  int64_t cursor = 0;  // every pool entry before it is expanded
  for (;;) {
    while (cursor < size && expanded[cursor]) ++cursor;
    if (cursor >= size) break;
    expanded[cursor] = 1;
    const int32_t* neighbours = g.row(pool[cursor].row);
    // The next node to expand (unless this one's neighbours take its place) and the visited stamps
    // of this one's neighbours, fetched side by side instead of one miss after another: 5-7% more
    // queries a second (synthetic 1M x 128, Graph32, widths 14 .. 40).
    if (cursor + 1 < size) __builtin_prefetch(g.row(pool[cursor + 1].row));
    for (int32_t j = 0; j < g.degree && neighbours[j] != kEmptySlot; ++j) visited.prefetch(neighbours[j]);
    int64_t n_fresh = 0;
    for (int32_t j = 0; j < g.degree; ++j) {
      const int32_t r = neighbours[j];
      if (r == kEmptySlot) break;
      if (!visited.test_and_set(r)) fresh[n_fresh++] = r;
    }
    for (int64_t i = 0; i < std::min<int64_t>(n_fresh, kPrefetchAhead); ++i) prefetch_vector(vectors + fresh[i] * dim, dim);
    int64_t lowest = size;  // the closest position an insertion took
    for (int64_t i = 0; i < n_fresh; ++i) {
      if (i + kPrefetchAhead < n_fresh) prefetch_vector(vectors + fresh[i + kPrefetchAhead] * dim, dim);
      lowest = std::min(lowest, offer(fresh[i]));
    }
    cursor = std::min(cursor + 1, lowest);
  }

  if (filtered) {
    out.assign(accepted, accepted + n_accepted);
  } else {
    out.assign(pool, pool + std::min(size, k));
  }
}

}  // namespace quiver
