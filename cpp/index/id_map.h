// The ids of an index's vectors, in row order, with the reverse map that makes duplicate checks and
// removal by id cheap. Shared by every index kind that stores vectors by row.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "cpp/select/topk.h"

namespace quiver {

// Checks that n new ids are >= 0, unique among themselves and not keys of `present`; throws
// invalid_argument naming the first offender. With ids == nullptr, fills `assigned` with consecutive
// ids after max_id and returns it; else returns ids. Shared by the kinds' id tables.
const int64_t* check_new_ids(int64_t n, const int64_t* ids, int64_t max_id,
                             const std::unordered_map<int64_t, int64_t>& present,
                             std::vector<int64_t>& assigned);
// The same, with presence asked of a predicate (ids spread over several tables).
const int64_t* check_new_ids(int64_t n, const int64_t* ids, int64_t max_id,
                             const std::function<bool(int64_t)>& present, std::vector<int64_t>& assigned);

class IdMap {
 public:
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }
  const int64_t* data() const { return ids_.data(); }
  const std::vector<int64_t>& ids() const { return ids_; }
  // The row holding id, or -1.
  int64_t row_of(int64_t id) const {
    const auto it = row_of_.find(id);
    return it == row_of_.end() ? -1 : it->second;
  }
  // True when row r holds id r for every row: results need no translation.
  bool is_identity() const { return identity_; }

  // Checks that n new ids are >= 0, unique among themselves and not present; throws invalid_argument
  // naming the first offender. With ids == nullptr, fills `assigned` with consecutive ids after the
  // largest present and returns it; else returns ids.
  const int64_t* check_new(int64_t n, const int64_t* ids, std::vector<int64_t>& assigned) const;

  // Appends ids already checked by check_new. Strong guarantee: on failure nothing changes.
  void append(int64_t n, const int64_t* ids);

  // The rows holding the given ids (ids not present are skipped), sorted, without duplicates.
  std::vector<int64_t> rows_of(int64_t n, const int64_t* ids) const;

  // A copy without the given sorted rows, the rest renumbered, as the kind compacts its storage.
  // Built aside so the kind can commit all its changes at once (nothing changes if this throws).
  IdMap without_rows(const std::vector<int64_t>& rows) const;

  // Replaces the content (after loading); throws corrupt_data on negative or duplicate ids.
  void assign(std::vector<int64_t> ids);

  // The rows an id filter allows, as a row bitset (bit r % 8 of byte r / 8), for engines that
  // filter by row; empty when the filter allows every id.
  std::vector<uint8_t> row_filter_bits(const IdFilter& filter) const;

  int64_t memory_bytes() const;

 private:
  void rebuild_index();

  std::vector<int64_t> ids_;
  std::unordered_map<int64_t, int64_t> row_of_;
  int64_t max_id_ = -1;
  bool identity_ = true;
};

}  // namespace quiver
