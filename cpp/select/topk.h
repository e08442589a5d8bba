// k-selection of the smallest keys: a bounded max-heap fed by the scan kernels (select/scan.h).
// Ties between equal keys go to the smaller index, so results do not depend on how work was split.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/select/scan.h"

namespace quiver {

// Which database rows may be returned: a bitset over ids (not row numbers), as in the C API.
struct IdFilter {
  const uint8_t* bits = nullptr;  // nullptr: every id is allowed
  int64_t nbits = 0;
  bool allows(int64_t id) const {
    return bits == nullptr || (id >= 0 && id < nbits && ((bits[id >> 3] >> (id & 7)) & 1));
  }
};

class TopK {
 public:
  // keys/indices: storage for k entries, owned by the caller.
  TopK(int64_t k, float* keys, int64_t* indices, const IdFilter* filter, const int64_t* ids);

  ScanSink* sink() { return &sink_; }
  int64_t size() const { return size_; }
  const float* keys() const { return keys_; }
  const int64_t* indices() const { return indices_; }
  // Offers one candidate directly (used when merging partial results).
  void offer(float key, int64_t index);

 private:
  static void accept(ScanSink* sink, float key, int64_t index);
  bool worse(int64_t a, int64_t b) const;  // entry a is worse than entry b
  void sift_down(int64_t i);
  void sift_up(int64_t i);

  ScanSink sink_;  // first member: accept() recovers the TopK from the sink pointer
  int64_t k_;
  float* keys_;
  int64_t* indices_;
  int64_t size_ = 0;
  const IdFilter* filter_;
  const int64_t* ids_;  // row -> id for the filter; nullptr: the row number is the id
};

// A candidate list entry, ordered by key then index.
struct Candidate {
  float key;
  int64_t index;
  bool operator<(const Candidate& other) const {
    return key < other.key || (key == other.key && index < other.index);
  }
};

}  // namespace quiver
