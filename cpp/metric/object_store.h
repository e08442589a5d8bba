// The objects a metric-space index holds, by row: float vectors (n x dim) or byte strings (one byte
// array and n + 1 offsets). Rows are appended and erased; a view (Objects) reads them.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/metric/objects.h"

namespace quiver {

class ByteReader;
class ByteWriter;

class ObjectStore {
 public:
  // dim >= 1: vectors of dim floats; dim == 0: byte strings.
  explicit ObjectStore(int64_t dim) : dim_(dim) {}

  int64_t size() const { return size_; }
  int64_t dim() const { return dim_; }
  Objects view() const;

  // Appends the objects of x (of this store's kind). Strong guarantee.
  void append(const Objects& x);
  // Removes the given rows (sorted ascending, distinct, < size); the rest keep their order.
  void erase(const std::vector<int64_t>& rows);

  int64_t memory_bytes() const;
  void save(ByteWriter& out) const;
  // Replaces the content with `count` objects read from `in`; corrupt_data when they do not parse.
  void load(ByteReader& in, int64_t count);

 private:
  int64_t dim_;
  int64_t size_ = 0;
  std::vector<float> vectors_;
  std::vector<int64_t> offsets_{0};
  std::vector<uint8_t> bytes_;
};

}  // namespace quiver
