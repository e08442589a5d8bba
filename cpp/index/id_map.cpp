#include "cpp/index/id_map.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "cpp/core/error.h"

namespace quiver {

const int64_t* check_new_ids(int64_t n, const int64_t* ids, int64_t max_id,
                             const std::unordered_map<int64_t, int64_t>& present,
                             std::vector<int64_t>& assigned) {
  return check_new_ids(n, ids, max_id, [&](int64_t id) { return present.count(id) > 0; }, assigned);
}

const int64_t* check_new_ids(int64_t n, const int64_t* ids, int64_t max_id,
                             const std::function<bool(int64_t)>& present, std::vector<int64_t>& assigned) {
  if (ids == nullptr) {
    if (max_id >= 0 && n > std::numeric_limits<int64_t>::max() - max_id)
      fail(Status::invalid_argument, "ids: ", n, " new ids after the largest present (", max_id,
           ") would pass INT64_MAX; pass ids explicitly");
    assigned.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) assigned[i] = max_id + 1 + i;
    return assigned.data();
  }
  std::unordered_set<int64_t> seen;
  seen.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0) fail(Status::invalid_argument, "ids[", i, "] = ", ids[i], " is negative");
    if (!seen.insert(ids[i]).second)
      fail(Status::invalid_argument, "ids[", i, "] = ", ids[i], " appears twice in the call");
    if (present(ids[i]))
      fail(Status::invalid_argument, "ids[", i, "] = ", ids[i], " is already in the index");
  }
  return ids;
}

const int64_t* IdMap::check_new(int64_t n, const int64_t* ids, std::vector<int64_t>& assigned) const {
  return check_new_ids(n, ids, max_id_, row_of_, assigned);
}

void IdMap::append(int64_t n, const int64_t* ids) {
  ids_.reserve(ids_.size() + static_cast<size_t>(n));
  row_of_.reserve(row_of_.size() + static_cast<size_t>(n));
  const int64_t first_row = size();
  int64_t i = 0;
  try {
    for (; i < n; ++i) row_of_.emplace(ids[i], first_row + i);
  } catch (...) {
    for (int64_t j = 0; j < i; ++j) row_of_.erase(ids[j]);
    throw;
  }
  ids_.insert(ids_.end(), ids, ids + n);  // capacity reserved above: cannot throw
  for (int64_t j = 0; j < n; ++j) {
    max_id_ = std::max(max_id_, ids[j]);
    identity_ = identity_ && ids[j] == first_row + j;
  }
}

std::vector<int64_t> IdMap::rows_of(int64_t n, const int64_t* ids) const {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < n; ++i) {
    auto it = row_of_.find(ids[i]);
    if (it != row_of_.end()) rows.push_back(it->second);
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

IdMap IdMap::without_rows(const std::vector<int64_t>& rows) const {
  IdMap result;
  result.ids_.reserve(ids_.size() - rows.size());
  size_t next = 0;
  for (int64_t r = 0; r < size(); ++r) {
    if (next < rows.size() && rows[next] == r) {
      ++next;
      continue;
    }
    result.ids_.push_back(ids_[r]);
  }
  result.rebuild_index();
  return result;
}

void IdMap::assign(std::vector<int64_t> ids) {
  ids_ = std::move(ids);
  rebuild_index();
  if (row_of_.size() != ids_.size())
    fail(Status::corrupt_data, "corrupt index: duplicate ids in the stored id list");
  for (int64_t id : ids_)
    if (id < 0) fail(Status::corrupt_data, "corrupt index: negative stored id ", id);
}

void IdMap::rebuild_index() {
  std::unordered_map<int64_t, int64_t> row_of;
  row_of.reserve(ids_.size());
  max_id_ = -1;
  identity_ = true;
  for (int64_t r = 0; r < size(); ++r) {
    row_of.emplace(ids_[r], r);
    max_id_ = std::max(max_id_, ids_[r]);
    identity_ = identity_ && ids_[r] == r;
  }
  row_of_.swap(row_of);
}

int64_t IdMap::memory_bytes() const {
  // Vector storage plus roughly a node and a bucket per entry of the hash map.
  constexpr int64_t kBytesPerMapEntry = 40;
  return static_cast<int64_t>(ids_.capacity() * sizeof(int64_t)) +
         static_cast<int64_t>(row_of_.size()) * kBytesPerMapEntry;
}

std::vector<uint8_t> IdMap::row_filter_bits(const IdFilter& filter) const {
  if (!filter.bits) return {};
  std::vector<uint8_t> bits(static_cast<size_t>((size() + 7) / 8), 0);
  for (int64_t r = 0; r < size(); ++r)
    if (filter.allows(ids_[r])) bits[r / 8] |= static_cast<uint8_t>(1u << (r % 8));
  return bits;
}

}  // namespace quiver
