// The visited set of one graph search: a stamp per row, where "visited" means "stamped with this
// search's generation". Starting a search is one increment, not a clear of n entries, so one set is
// reused across the queries of a thread without per-query allocation or clearing. 16-bit stamps
// halve the memory traffic of 32-bit ones; the set is cleared once every 65 535 searches.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace quiver {

class VisitedSet {
 public:
  // Starts a new search over `rows` rows.
  void begin(int64_t rows) {
    if (static_cast<int64_t>(stamps_.size()) < rows) {
      stamps_.assign(static_cast<size_t>(rows), 0);
      generation_ = 0;
    }
    if (++generation_ == 0) {  // wrapped: old stamps could collide with new generations
      std::memset(stamps_.data(), 0, stamps_.size() * sizeof(uint16_t));
      generation_ = 1;
    }
  }
  // Marks row r; returns whether it was already marked in this search.
  bool test_and_set(int32_t r) {
    uint16_t& s = stamps_[static_cast<size_t>(r)];
    if (s == generation_) return true;
    s = generation_;
    return false;
  }
  bool contains(int32_t r) const { return stamps_[static_cast<size_t>(r)] == generation_; }
  void prefetch(int32_t r) const { __builtin_prefetch(stamps_.data() + r); }
  int64_t memory_bytes() const { return static_cast<int64_t>(stamps_.capacity() * sizeof(uint16_t)); }

 private:
  std::vector<uint16_t> stamps_;
  uint16_t generation_ = 0;
};

}  // namespace quiver
