#include "cpp/index/ivf_lists.h"

#include <algorithm>
#include <cstring>

#include "cpp/core/error.h"
#include "cpp/distance/vectors.h"

namespace quiver {

namespace {

// Capacity for `needed` elements, doubling so that many small adds cost amortised linear time.
template <typename T>
void reserve_geometric(std::vector<T>& v, size_t needed) {
  if (v.capacity() < needed) v.reserve(std::max(needed, v.capacity() * 2));
}

// Moves the kept entries of one list to the front: entry r keeps its place unless removed[r].
template <typename T>
void compact(std::vector<T>& v, const std::vector<bool>& removed, size_t width) {
  if (v.empty()) return;
  size_t out = 0;
  for (size_t r = 0; r < removed.size(); ++r) {
    if (removed[r]) continue;
    if (out != r) std::memmove(&v[out * width], &v[r * width], width * sizeof(T));
    ++out;
  }
  v.resize(out * width);
}

}  // namespace

InvertedLists::InvertedLists(int64_t nlist, const ListLayout& layout)
    : layout_(layout), lists_(static_cast<size_t>(nlist)) {}

void InvertedLists::append(int64_t n, const int64_t* lists, const int64_t* ids, const uint8_t* codes,
                           const float* vectors) {
  std::vector<int64_t> added(lists_.size(), 0);
  for (int64_t i = 0; i < n; ++i) ++added[lists[i]];
  // Every allocation first: once entries go in, nothing can fail.
  for (size_t l = 0; l < lists_.size(); ++l) {
    if (added[l] == 0) continue;
    InvertedList& list = lists_[l];
    const size_t size = static_cast<size_t>(list.size() + added[l]);
    if (static_cast<int64_t>(size) > kMaxListSize)
      fail(Status::unsupported, "list ", l, " would hold ", size, " entries, more than ", kMaxListSize,
           " (use more lists)");
    reserve_geometric(list.ids, size);
    if (layout_.code_bytes > 0) reserve_geometric(list.codes, size * layout_.code_bytes);
    if (layout_.vectors) reserve_geometric(list.vectors, size * layout_.dim);
    if (layout_.norms) reserve_geometric(list.norms, size);
  }
  const size_t dim = static_cast<size_t>(layout_.dim), code_bytes = static_cast<size_t>(layout_.code_bytes);
  for (int64_t i = 0; i < n; ++i) {
    InvertedList& list = lists_[lists[i]];
    list.ids.push_back(ids[i]);
    if (code_bytes > 0) list.codes.insert(list.codes.end(), codes + i * code_bytes, codes + (i + 1) * code_bytes);
    if (layout_.vectors) list.vectors.insert(list.vectors.end(), vectors + i * dim, vectors + (i + 1) * dim);
    if (layout_.norms) list.norms.push_back(squared_norm(vectors + i * dim, layout_.dim));
  }
  count_ += n;
}

void InvertedLists::remove(const std::vector<std::pair<int64_t, int64_t>>& list_ids) {
  // The one allocation comes first: once a list changes, nothing can fail.
  size_t largest = 0;
  for (const auto& entry : list_ids) largest = std::max(largest, lists_[entry.first].ids.size());
  std::vector<bool> removed;
  removed.reserve(largest);
  for (size_t begin = 0; begin < list_ids.size();) {
    const int64_t l = list_ids[begin].first;
    size_t end = begin;
    while (end < list_ids.size() && list_ids[end].first == l) ++end;
    InvertedList& list = lists_[l];
    // The pairs of one list are sorted by id: a binary search marks each entry.
    removed.assign(list.ids.size(), false);
    for (size_t r = 0; r < list.ids.size(); ++r) {
      const auto it = std::lower_bound(list_ids.begin() + begin, list_ids.begin() + end,
                                       std::make_pair(l, list.ids[r]));
      removed[r] = it != list_ids.begin() + end && it->second == list.ids[r];
    }
    compact(list.ids, removed, 1);
    compact(list.codes, removed, static_cast<size_t>(layout_.code_bytes));
    compact(list.vectors, removed, static_cast<size_t>(layout_.dim));
    compact(list.norms, removed, 1);
    count_ -= static_cast<int64_t>(end - begin);
    begin = end;
  }
}

int64_t InvertedLists::memory_bytes() const {
  int64_t bytes = static_cast<int64_t>(lists_.capacity() * sizeof(InvertedList));
  for (const InvertedList& list : lists_)
    bytes += static_cast<int64_t>(list.ids.capacity() * sizeof(int64_t) + list.codes.capacity() +
                                  (list.vectors.capacity() + list.norms.capacity()) * sizeof(float));
  return bytes;
}

}  // namespace quiver
