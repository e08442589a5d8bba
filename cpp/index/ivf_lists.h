// The inverted lists of a CPU IVF index, in host memory: per list the entries' ids and codes, in the
// order they were added. Lists grow geometrically, so adding never rebuilds the index; removal
// compacts the affected lists in place.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace quiver {

// Largest number of entries of one list: search encodes (list, offset) pairs in 64 bits.
constexpr int64_t kMaxListSize = (int64_t{1} << 31) - 1;

// What each entry of a list stores.
struct ListLayout {
  int64_t dim = 0;
  int64_t code_bytes = 0;  // PQ code bytes (M); 0 for IVF-Flat, whose code is the vector itself
  bool vectors = false;    // dim floats: IVF-Flat's code, or IVF-PQ's raw vector for Refine
  bool norms = false;      // squared norms of the vectors (IVF-Flat with L2: the GEMM keys' bias)
};

struct InvertedList {
  std::vector<int64_t> ids;
  std::vector<uint8_t> codes;  // size x code_bytes
  std::vector<float> vectors;  // size x dim
  std::vector<float> norms;    // size
  int64_t size() const { return static_cast<int64_t>(ids.size()); }
};

class InvertedLists {
 public:
  InvertedLists(int64_t nlist, const ListLayout& layout);

  int64_t nlist() const { return static_cast<int64_t>(lists_.size()); }
  const ListLayout& layout() const { return layout_; }
  const InvertedList& operator[](int64_t list) const { return lists_[list]; }
  int64_t count() const { return count_; }

  // Appends n entries, entry i to list lists[i]: ids[i], codes[i * code_bytes ..], vectors[i * dim ..]
  // (codes or vectors nullptr when the layout has none). Strong guarantee: on failure (out of
  // memory, a list beyond kMaxListSize) nothing changes.
  void append(int64_t n, const int64_t* lists, const int64_t* ids, const uint8_t* codes, const float* vectors);

  // Removes the entries given as (list, id) pairs, sorted, each present. Strong guarantee.
  void remove(const std::vector<std::pair<int64_t, int64_t>>& list_ids);

  // Host bytes held (capacities).
  int64_t memory_bytes() const;

 private:
  ListLayout layout_;
  std::vector<InvertedList> lists_;
  int64_t count_ = 0;
};

}  // namespace quiver
