// The ids of an inverted-file index and the list each one is in: duplicate checks on add and
// removal by id find their list without scanning the others. Shared by the CPU and GPU kinds.
//
// Ids mostly come in runs of consecutive values (assigned ones always do, and a sharded index hands
// each shard runs): those are kept as runs, 4 bytes a list number per id, appended in O(1) each and
// found by a binary search over the runs; a removed id's slot is kept (absent) and reused if the id
// comes back. Ids that do not extend or start a run past every run (an id inside a gap) and list
// numbers past int32 go to a hash map. A billion ids cost 4 GB, not 40.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace quiver {

class IvfIds {
 public:
  int64_t size() const { return count_; }

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

  // Loading: assign_list gathers each stored list's ids, finish_loading builds the table from them
  // (in id order, so runs come back as runs); it throws corrupt_data on negative or duplicate ids.
  void assign_list(int64_t list, int64_t n, const int64_t* ids);
  void finish_loading();

  int64_t memory_bytes() const;

 private:
  struct Run {
    int64_t first;   // ids first, first + 1, ... (up to the next run's offset) ...
    int64_t offset;  // ... have their list numbers at lists_[offset ...]
  };
  static constexpr int32_t kAbsent = -1;

  int64_t runs_end() const;           // one past the last run's last id (0 with no run)
  int64_t slot_of(int64_t id) const;  // id's place in lists_ when a run covers it, else -1
  bool present_id(int64_t id) const { return list_of(id) >= 0; }
  void append_run_entry(int64_t id, int32_t list);

  std::vector<Run> runs_;
  std::vector<int32_t> lists_;  // kAbsent: removed
  std::unordered_map<int64_t, int64_t> sparse_;
  std::vector<std::pair<int64_t, int64_t>> loading_;  // (id, list) between assign_list and finish_loading
  int64_t count_ = 0;
  int64_t max_id_ = -1;
};

}  // namespace quiver
