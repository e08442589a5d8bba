// Little-endian serialisation of an index into bytes, and bounds-checked reading back. Every read
// checks the remaining length first, so a truncated or damaged buffer raises corrupt_data instead of
// reading out of bounds or allocating absurd sizes.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cpp/core/error.h"

namespace quiver {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the index format is little-endian; big-endian hosts need byte swapping here");

class ByteWriter {
 public:
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void string(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  template <typename T>
  void array(const T* data, int64_t count) {
    raw(data, static_cast<size_t>(count) * sizeof(T));
  }
  void raw(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint32_t u32(const char* what) { return value<uint32_t>(what); }
  uint64_t u64(const char* what) { return value<uint64_t>(what); }
  int64_t i64(const char* what) { return value<int64_t>(what); }
  std::string string(const char* what, uint32_t max_length) {
    const uint32_t length = u32(what);
    if (length > max_length) fail(Status::corrupt_data, "corrupt index: ", what, " length ", length);
    need(length, what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), length);
    pos_ += length;
    return s;
  }
  // Reads count elements, after checking they are really there.
  template <typename T>
  void array(std::vector<T>& out, int64_t count, const char* what) {
    if (count < 0 || static_cast<uint64_t>(count) > remaining() / sizeof(T))
      fail(Status::corrupt_data, "corrupt or truncated index: ", what, " (", count,
           " elements) exceeds the data");
    out.resize(static_cast<size_t>(count));
    if (count == 0) return;  // out.data() may be null
    std::memcpy(out.data(), data_ + pos_, static_cast<size_t>(count) * sizeof(T));
    pos_ += static_cast<size_t>(count) * sizeof(T);
  }
  size_t remaining() const { return size_ - pos_; }
  size_t position() const { return pos_; }

 private:
  void need(size_t n, const char* what) {
    if (n > remaining()) fail(Status::corrupt_data, "truncated index: ", what, " is cut off");
  }
  template <typename T>
  T value(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace quiver
