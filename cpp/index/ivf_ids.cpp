#include "cpp/index/ivf_ids.h"

#include <algorithm>
#include <limits>

#include "cpp/core/error.h"
#include "cpp/index/id_map.h"

namespace quiver {

namespace {

bool fits_run(int64_t list) { return list <= std::numeric_limits<int32_t>::max(); }

}  // namespace

int64_t IvfIds::runs_end() const {
  if (runs_.empty()) return 0;
  return runs_.back().first + (static_cast<int64_t>(lists_.size()) - runs_.back().offset);
}

int64_t IvfIds::slot_of(int64_t id) const {
  if (runs_.empty() || id < runs_.front().first) return -1;
  const auto after = std::upper_bound(runs_.begin(), runs_.end(), id,
                                      [](int64_t value, const Run& run) { return value < run.first; });
  const auto run = after - 1;
  const int64_t end = after == runs_.end() ? static_cast<int64_t>(lists_.size()) : after->offset;
  const int64_t slot = run->offset + (id - run->first);
  return slot < end ? slot : -1;
}

const int64_t* IvfIds::check_new(int64_t n, const int64_t* ids, std::vector<int64_t>& assigned) const {
  return check_new_ids(n, ids, max_id_, [this](int64_t id) { return present_id(id); }, assigned);
}

void IvfIds::append_run_entry(int64_t id, int32_t list) {
  if (runs_.empty() || id != runs_end()) runs_.push_back({id, static_cast<int64_t>(lists_.size())});
  lists_.push_back(list);
}

void IvfIds::insert(int64_t n, const int64_t* ids, const int64_t* lists) {
  // First where each id goes, without changing anything: a run past every run (extended or new),
  // a removed slot of a run, or the map. The vectors are then reserved, so appending cannot throw.
  int64_t end = runs_end(), appended = 0, new_runs = 0, mapped = 0;
  bool any_run = !runs_.empty();
  for (int64_t i = 0; i < n; ++i) {
    if (fits_run(lists[i]) && ids[i] >= end) {
      new_runs += !any_run || ids[i] != end;
      ++appended;
      end = ids[i] + 1;
      any_run = true;
    } else if (!fits_run(lists[i]) || slot_of(ids[i]) < 0) {
      ++mapped;
    }
  }
  lists_.reserve(lists_.size() + static_cast<size_t>(appended));
  runs_.reserve(runs_.size() + static_cast<size_t>(new_runs));
  if (mapped > 0) sparse_.reserve(sparse_.size() + static_cast<size_t>(mapped));

  const size_t old_runs = runs_.size(), old_lists = lists_.size();
  const int64_t old_end = runs_end();
  int64_t i = 0;
  try {
    for (; i < n; ++i) {
      if (!fits_run(lists[i])) {
        sparse_.emplace(ids[i], lists[i]);  // the one step that may throw
      } else if (ids[i] >= runs_end()) {
        append_run_entry(ids[i], static_cast<int32_t>(lists[i]));
      } else if (const int64_t slot = slot_of(ids[i]); slot >= 0) {
        lists_[static_cast<size_t>(slot)] = static_cast<int32_t>(lists[i]);
      } else {
        sparse_.emplace(ids[i], lists[i]);
      }
    }
  } catch (...) {
    runs_.resize(old_runs);
    lists_.resize(old_lists);
    for (int64_t j = 0; j < i; ++j) {
      const int64_t slot = ids[j] < old_end ? slot_of(ids[j]) : -1;
      if (slot >= 0 && lists_[static_cast<size_t>(slot)] != kAbsent)
        lists_[static_cast<size_t>(slot)] = kAbsent;
      else
        sparse_.erase(ids[j]);
    }
    throw;
  }
  count_ += n;
  for (int64_t j = 0; j < n; ++j) max_id_ = std::max(max_id_, ids[j]);
}

int64_t IvfIds::list_of(int64_t id) const {
  const int64_t slot = slot_of(id);
  if (slot >= 0 && lists_[static_cast<size_t>(slot)] != kAbsent) return lists_[static_cast<size_t>(slot)];
  if (sparse_.empty()) return -1;
  const auto it = sparse_.find(id);
  return it == sparse_.end() ? -1 : it->second;
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
    const int64_t slot = slot_of(entry.second);
    if (slot >= 0 && lists_[static_cast<size_t>(slot)] != kAbsent)
      lists_[static_cast<size_t>(slot)] = kAbsent;
    else
      sparse_.erase(entry.second);
    max_removed = max_removed || entry.second == max_id_;
  }
  count_ -= static_cast<int64_t>(list_ids.size());
  if (count_ == 0) {
    runs_.clear();
    lists_.clear();
    sparse_.clear();
  }
  if (!max_removed) return;
  // New ids continue after the largest remaining one, as for every other kind: the last slot of
  // the runs still holding one, or a larger id of the map.
  max_id_ = -1;
  for (size_t r = runs_.size(); r-- > 0 && max_id_ < 0;) {
    const int64_t end = r + 1 < runs_.size() ? runs_[r + 1].offset : static_cast<int64_t>(lists_.size());
    for (int64_t slot = end; slot-- > runs_[r].offset;)
      if (lists_[static_cast<size_t>(slot)] != kAbsent) {
        max_id_ = runs_[r].first + (slot - runs_[r].offset);
        break;
      }
  }
  for (const auto& entry : sparse_) max_id_ = std::max(max_id_, entry.first);
}

void IvfIds::assign_list(int64_t list, int64_t n, const int64_t* ids) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0) fail(Status::corrupt_data, "corrupt index: negative stored id ", ids[i]);
  loading_.reserve(loading_.size() + static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) loading_.push_back({ids[i], list});
}

void IvfIds::finish_loading() {
  std::vector<std::pair<int64_t, int64_t>> loaded;
  loaded.swap(loading_);
  std::sort(loaded.begin(), loaded.end());
  for (size_t i = 1; i < loaded.size(); ++i)
    if (loaded[i].first == loaded[i - 1].first)
      fail(Status::corrupt_data, "corrupt index: id ", loaded[i].first, " is stored twice");
  runs_.clear();
  lists_.clear();
  sparse_.clear();
  lists_.reserve(loaded.size());
  for (const auto& [id, list] : loaded) {
    if (fits_run(list))
      append_run_entry(id, static_cast<int32_t>(list));
    else
      sparse_.emplace(id, list);
  }
  count_ = static_cast<int64_t>(loaded.size());
  max_id_ = loaded.empty() ? -1 : loaded.back().first;
}

int64_t IvfIds::memory_bytes() const {
  // The runs and list numbers, and roughly a node and a bucket per entry of the map.
  constexpr int64_t kBytesPerMapEntry = 40;
  return static_cast<int64_t>(runs_.capacity() * sizeof(Run) + lists_.capacity() * sizeof(int32_t)) +
         static_cast<int64_t>(sparse_.size()) * kBytesPerMapEntry;
}

}  // namespace quiver
