#include "cpp/metric/object_store.h"

#include <algorithm>

#include "cpp/core/error.h"
#include "cpp/io/bytes.h"

namespace quiver {

Objects ObjectStore::view() const {
  if (dim_ > 0) return Objects::of_vectors(size_, dim_, vectors_.data());
  return Objects::of_strings(Strings{size_, offsets_.data(), bytes_.data()});
}

void ObjectStore::append(const Objects& x) {
  if (dim_ > 0) {
    vectors_.insert(vectors_.end(), x.vectors, x.vectors + x.n * dim_);
  } else {
    const Strings& s = x.strings;
    const int64_t first = s.offsets[0];
    const int64_t total = s.offsets[s.n] - first;
    std::vector<int64_t> offsets = offsets_;
    offsets.reserve(offsets.size() + static_cast<size_t>(s.n));
    const int64_t base = static_cast<int64_t>(bytes_.size());
    for (int64_t i = 1; i <= s.n; ++i) offsets.push_back(base + s.offsets[i] - first);
    if (total > 0) bytes_.insert(bytes_.end(), s.bytes + first, s.bytes + first + total);
    offsets_.swap(offsets);  // no throw after the byte insert
  }
  size_ += x.n;
}

void ObjectStore::erase(const std::vector<int64_t>& rows) {
  if (rows.empty()) return;
  size_t next = 0;
  int64_t kept = 0;
  if (dim_ > 0) {
    for (int64_t r = 0; r < size_; ++r) {
      if (next < rows.size() && rows[next] == r) { ++next; continue; }
      if (kept != r) std::copy_n(vectors_.begin() + r * dim_, dim_, vectors_.begin() + kept * dim_);
      ++kept;
    }
    vectors_.resize(static_cast<size_t>(kept * dim_));
  } else {
    std::vector<int64_t> offsets{0};
    std::vector<uint8_t> bytes;
    for (int64_t r = 0; r < size_; ++r) {
      if (next < rows.size() && rows[next] == r) { ++next; continue; }
      bytes.insert(bytes.end(), bytes_.begin() + offsets_[r], bytes_.begin() + offsets_[r + 1]);
      offsets.push_back(static_cast<int64_t>(bytes.size()));
      ++kept;
    }
    offsets_.swap(offsets);
    bytes_.swap(bytes);
  }
  size_ = kept;
}

int64_t ObjectStore::memory_bytes() const {
  return static_cast<int64_t>(vectors_.capacity() * sizeof(float) + offsets_.capacity() * sizeof(int64_t) +
                              bytes_.capacity());
}

void ObjectStore::save(ByteWriter& out) const {
  if (dim_ > 0) {
    out.array(vectors_.data(), size_ * dim_);
    return;
  }
  out.array(offsets_.data(), size_ + 1);
  out.i64(static_cast<int64_t>(bytes_.size()));
  out.array(bytes_.data(), static_cast<int64_t>(bytes_.size()));
}

void ObjectStore::load(ByteReader& in, int64_t count) {
  ObjectStore loaded(dim_);
  loaded.size_ = count;
  if (dim_ > 0) {
    if (count > 0 && static_cast<uint64_t>(count) > in.remaining() / sizeof(float) / static_cast<uint64_t>(dim_))
      fail(Status::corrupt_data, "corrupt index: ", count, " vectors exceed the data");
    in.array(loaded.vectors_, count * dim_, "vectors");
  } else {
    in.array(loaded.offsets_, count + 1, "string offsets");
    const int64_t total = in.i64("string bytes");
    in.array(loaded.bytes_, total, "string bytes");
    if (loaded.offsets_[0] != 0 || loaded.offsets_[count] != total)
      fail(Status::corrupt_data, "corrupt index: string offsets do not span the bytes");
    for (int64_t i = 0; i < count; ++i) {
      const int64_t length = loaded.offsets_[i + 1] - loaded.offsets_[i];
      if (length < 0 || length > kMaxStringBytes)
        fail(Status::corrupt_data, "corrupt index: string ", i, " has length ", length);
    }
  }
  *this = std::move(loaded);
}

}  // namespace quiver
