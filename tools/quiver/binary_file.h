// A FILE* with checked reads and writes that throw Failure naming the file, shared by the readers
// and writers so that truncated or unwritable files are reported the same way everywhere.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace qvtool {

class InputFile {
 public:
  explicit InputFile(const std::string &path);
  ~InputFile();
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  int64_t size() const { return size_; }
  const std::string &path() const { return path_; }
  // Reads exactly n bytes or throws Failure("<path>: truncated ... <what>").
  void read(void *dst, size_t n, const char *what);
  void seek(int64_t offset);

 private:
  std::string path_;
  FILE *f_ = nullptr;
  int64_t size_ = 0;
};

// Writes to "<path>.tmp" and renames over path on commit(), so an interrupted write never leaves a
// half-written data file that a later run would mistake for a good one.
class OutputFile {
 public:
  explicit OutputFile(const std::string &path);
  ~OutputFile();
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  void write(const void *src, size_t n);
  void commit();

 private:
  std::string path_, tmp_;
  FILE *f_ = nullptr;
};

// Little-endian fields, whatever the host (TEXMEX and .npy headers are little-endian).
inline int32_t load_le_i32(const unsigned char *p) {
  return static_cast<int32_t>(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
                              uint32_t(p[3]) << 24);
}
inline void store_le_i32(unsigned char *p, int32_t v) {
  uint32_t u = static_cast<uint32_t>(v);
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(u >> (8 * i));
}

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the vector readers copy float payloads as-is and assume a little-endian host"
#endif

}  // namespace qvtool
