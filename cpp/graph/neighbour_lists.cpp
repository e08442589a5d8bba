#include "cpp/graph/neighbour_lists.h"

#include <limits>

namespace quiver {

NeighbourLists::NeighbourLists(int64_t n, int64_t capacity)
    : n_(n),
      capacity_(capacity),
      keys_(static_cast<size_t>(n * capacity)),
      ids_(static_cast<size_t>(n * capacity), -1),
      flags_(static_cast<size_t>(n * capacity), old_entry),
      sizes_(static_cast<size_t>(n), 0),
      worst_(new std::atomic<float>[static_cast<size_t>(n)]),
      locks_(new std::mutex[kLockStripes]) {
  for (int64_t u = 0; u < n; ++u) worst_[u].store(std::numeric_limits<float>::infinity(), std::memory_order_relaxed);
}

bool NeighbourLists::offer(int64_t u, float key, int32_t v) {
  if (v == u || !may_enter(u, key)) return false;
  std::lock_guard<std::mutex> guard(lock_of(u));
  return offer_exclusive(u, key, v);
}

bool NeighbourLists::offer_exclusive(int64_t u, float key, int32_t v) {
  if (v == u || !may_enter(u, key)) return false;
  float* keys = &keys_[u * capacity_];
  int32_t* ids = &ids_[u * capacity_];
  uint8_t* flags = &flags_[u * capacity_];
  int64_t size = sizes_[u];
  const auto before = [&](int64_t i) { return key < keys[i] || (key == keys[i] && v < ids[i]); };
  if (size == capacity_ && !before(size - 1)) return false;
  // The first entry that (key, v) goes before. v may be in the list already (offered again through
  // another common neighbour): then at exactly this place, since a pair's key is the same whoever
  // computes it (the distance kernels are symmetric and do not depend on where rows lie).
  int64_t lo = 0, hi = size;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (before(mid)) hi = mid; else lo = mid + 1;
  }
  const int64_t pos = lo;
  if (pos > 0 && ids[pos - 1] == v) return false;
  const int64_t last = size == capacity_ ? size - 1 : size;
  for (int64_t i = last; i > pos; --i) {
    keys[i] = keys[i - 1];
    ids[i] = ids[i - 1];
    flags[i] = flags[i - 1];
  }
  keys[pos] = key;
  ids[pos] = v;
  flags[pos] = inserted_now;
  if (size < capacity_) sizes_[u] = static_cast<int32_t>(++size);
  if (size == capacity_) worst_[u].store(keys[size - 1], std::memory_order_relaxed);
  return true;
}

}  // namespace quiver
