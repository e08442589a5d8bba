// Every point's best candidates so far, as a bounded list sorted closest first: the state that the
// approximate k-NN graph builders (ivf_candidates.*, nn_descent.*) fill and refine. Keys are
// smaller-is-closer (distances for L2, negated similarities otherwise); ties go to the smaller id,
// so a list holds the best `capacity` of everything ever offered to it, whatever the order of the
// offers: concurrent builders stay deterministic.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace quiver {

class NeighbourLists {
 public:
  // An entry's flag: whether NN-descent has already joined it with the other neighbours of its list.
  enum Flag : uint8_t { old_entry = 0, new_entry = 1, inserted_now = 2 };

  NeighbourLists(int64_t n, int64_t capacity);

  int64_t n() const { return n_; }
  int64_t capacity() const { return capacity_; }
  int64_t size(int64_t u) const { return sizes_[u]; }
  const float* keys(int64_t u) const { return &keys_[u * capacity_]; }
  const int32_t* ids(int64_t u) const { return &ids_[u * capacity_]; }
  uint8_t* flags(int64_t u) { return &flags_[u * capacity_]; }

  // Offers v (never u itself) at `key` to u's list, flagged inserted_now. Thread-safe for any mix of
  // u; returns whether v entered the list (false when it is there already or not good enough).
  // Every offer of one pair must come with the same key, bit for bit (duplicates are found by it).
  bool offer(int64_t u, float key, int32_t v);
  // As offer, for a caller that guarantees no other thread offers to u's list meanwhile.
  bool offer_exclusive(int64_t u, float key, int32_t v);

  // Whether (key, v) could enter u's list right now: a lock-free pre-check that may say yes
  // wrongly (offer decides), never no wrongly, since lists only improve.
  bool may_enter(int64_t u, float key) const {
    return key <= worst_[u].load(std::memory_order_relaxed);
  }

 private:
  std::mutex& lock_of(int64_t u) const { return locks_[static_cast<size_t>(u) % kLockStripes]; }

  // Lists share locks by stripe: a mutex per point would cost 40 bytes a point for nothing, since
  // with a few threads two of them rarely touch lists of one stripe at once.
  static constexpr size_t kLockStripes = 4096;

  int64_t n_, capacity_;
  std::vector<float> keys_;
  std::vector<int32_t> ids_;
  std::vector<uint8_t> flags_;
  std::vector<int32_t> sizes_;
  std::unique_ptr<std::atomic<float>[]> worst_;  // the last key of a full list, else +inf
  std::unique_ptr<std::mutex[]> locks_;
};

}  // namespace quiver
