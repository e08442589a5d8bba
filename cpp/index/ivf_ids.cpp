#include "cpp/index/ivf_ids.h"

#include <algorithm>

#include "cpp/core/error.h"
#include "cpp/index/id_map.h"

namespace quiver {

const int64_t* IvfIds::check_new(int64_t n, const int64_t* ids, std::vector<int64_t>& assigned) const {
  return check_new_ids(n, ids, max_id_, list_of_, assigned);
}

void IvfIds::insert(int64_t n, const int64_t* ids, const int64_t* lists) {
  list_of_.reserve(list_of_.size() + static_cast<size_t>(n));
  int64_t i = 0;
  try {
    for (; i < n; ++i) list_of_.emplace(ids[i], lists[i]);
  } catch (...) {
    for (int64_t j = 0; j < i; ++j) list_of_.erase(ids[j]);
    throw;
  }
  for (int64_t j = 0; j < n; ++j) max_id_ = std::max(max_id_, ids[j]);
}

int64_t IvfIds::list_of(int64_t id) const {
  const auto it = list_of_.find(id);
  return it == list_of_.end() ? -1 : it->second;
}

std::vector<std::pair<int64_t, int64_t>> IvfIds::present(int64_t n, const int64_t* ids) const {
  std::vector<std::pair<int64_t, int64_t>> found;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t list = list_of(ids[i]);
    if (list >= 0) found.push_back({list, ids[i]});
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

void IvfIds::erase(const std::vector<std::pair<int64_t, int64_t>>& list_ids) noexcept {
  bool max_removed = false;
  for (const auto& entry : list_ids) {
    list_of_.erase(entry.second);
    max_removed = max_removed || entry.second == max_id_;
  }
  if (!max_removed) return;
  // New ids continue after the largest remaining one, as for every other kind.
  max_id_ = -1;
  for (const auto& entry : list_of_) max_id_ = std::max(max_id_, entry.first);
}

void IvfIds::assign_list(int64_t list, int64_t n, const int64_t* ids) {
  list_of_.reserve(list_of_.size() + static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0) fail(Status::corrupt_data, "corrupt index: negative stored id ", ids[i]);
    if (!list_of_.emplace(ids[i], list).second)
      fail(Status::corrupt_data, "corrupt index: id ", ids[i], " is stored twice");
    max_id_ = std::max(max_id_, ids[i]);
  }
}

int64_t IvfIds::memory_bytes() const {
  // Roughly a node and a bucket per entry of the hash map.
  constexpr int64_t kBytesPerMapEntry = 40;
  return static_cast<int64_t>(list_of_.size()) * kBytesPerMapEntry;
}

}  // namespace quiver
