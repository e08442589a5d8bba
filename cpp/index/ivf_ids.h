// The ids of an inverted-file index and the list each one is in: duplicate checks on add and
// removal by id find their list without scanning the others. Shared by the CPU and GPU kinds.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace quiver {

class IvfIds {
 public:
  int64_t size() const { return static_cast<int64_t>(list_of_.size()); }

  // Checks that n new ids are >= 0, unique among themselves and not present; throws invalid_argument
  // naming the first offender. With ids == nullptr, fills `assigned` with consecutive ids after the
  // largest present and returns it; else returns ids.
  const int64_t* check_new(int64_t n, const int64_t* ids, std::vector<int64_t>& assigned) const;

  // Records ids already checked by check_new, each with its list. Strong guarantee.
  void insert(int64_t n, const int64_t* ids, const int64_t* lists);

  // The list holding id, or -1.
  int64_t list_of(int64_t id) const;

  // The present ids among n (each once), grouped as (list, id) pairs sorted by list then id.
  std::vector<std::pair<int64_t, int64_t>> present(int64_t n, const int64_t* ids) const;

  // Forgets ids known to be present. Does not throw.
  void erase(const std::vector<std::pair<int64_t, int64_t>>& list_ids) noexcept;

  // Rebuilds from stored lists (loading); throws corrupt_data on negative or duplicate ids.
  void assign_list(int64_t list, int64_t n, const int64_t* ids);

  int64_t memory_bytes() const;

 private:
  std::unordered_map<int64_t, int64_t> list_of_;
  int64_t max_id_ = -1;
};

}  // namespace quiver
