#include "idx_io.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "errors.h"

namespace qvtool {
namespace {

constexpr int kTypeUbyte = 0x08;
constexpr int kMaxRank = 4;
constexpr int64_t kMaxItemValues = 1 << 24;  // per item; far above any image
constexpr unsigned kChunkBytes = 1u << 22;   // gzread takes an unsigned length

// gzopen reads plain files transparently, so one path handles both .gz and raw IDX files.
class GzInput {
 public:
  explicit GzInput(const std::string &path) : path_(path) {
    f_ = gzopen(path.c_str(), "rb");
    if (!f_) throw Failure(path + ": cannot open: " + std::strerror(errno ? errno : ENOENT));
  }
  ~GzInput() { gzclose(f_); }
  GzInput(const GzInput &) = delete;
  GzInput &operator=(const GzInput &) = delete;

  // Reads up to n bytes; returns fewer only at the end of the data. Throws on corrupt gzip data.
  size_t read_some(void *dst, size_t n) {
    unsigned char *p = static_cast<unsigned char *>(dst);
    size_t done = 0;
    while (done < n) {
      unsigned want = static_cast<unsigned>(std::min<size_t>(kChunkBytes, n - done));
      int got = gzread(f_, p + done, want);
      if (got < 0) {
        int err = 0;
        const char *msg = gzerror(f_, &err);  // already names the file
        throw Failure(path_ + ": corrupt or unreadable gzip data (" + msg + ")");
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }

  void read_header(void *dst, size_t n) {
    if (read_some(dst, n) != n) throw Failure(path_ + ": truncated IDX file: incomplete header");
  }

 private:
  std::string path_;
  gzFile f_;
};

}  // namespace

FloatMatrix read_idx_ubyte(const std::string &path, int64_t max_rows) {
  GzInput in(path);
  unsigned char magic[4];
  in.read_header(magic, 4);
  if (magic[0] != 0 || magic[1] != 0 || magic[3] < 1 || magic[3] > kMaxRank)
    throw Failure(path + ": not an IDX file (bad magic number)");
  if (magic[2] != kTypeUbyte)
    throw Failure(path + ": IDX element type 0x" + std::to_string(magic[2]) +
                  " is not supported (only unsigned byte, 0x08)");
  const int rank = magic[3];
  unsigned char sizes[4 * kMaxRank];
  in.read_header(sizes, 4 * size_t(rank));
  int64_t dims[kMaxRank];
  for (int i = 0; i < rank; ++i) {
    const unsigned char *p = sizes + 4 * i;
    dims[i] = int64_t(p[0]) << 24 | int64_t(p[1]) << 16 | int64_t(p[2]) << 8 | int64_t(p[3]);
  }
  int64_t per_item = 1;
  for (int i = 1; i < rank; ++i) {
    per_item *= dims[i];
    if (per_item > kMaxItemValues || dims[i] == 0)
      throw Failure(path + ": corrupt IDX header (item size)");
  }

  FloatMatrix m;
  m.rows = std::min(dims[0], max_rows);
  m.cols = per_item;
  // Grow block by block rather than trusting the header's count: a corrupt count in a compressed
  // file must end in a "truncated" error, not in a huge allocation.
  const int64_t block_rows = std::max<int64_t>(1, int64_t(kChunkBytes) / per_item);
  std::vector<unsigned char> buf(static_cast<size_t>(std::min(block_rows, m.rows) * per_item));
  for (int64_t r0 = 0; r0 < m.rows; r0 += block_rows) {
    const int64_t nr = std::min(block_rows, m.rows - r0);
    const size_t bytes = static_cast<size_t>(nr * per_item);
    const size_t got = in.read_some(buf.data(), bytes);
    if (got != bytes)
      throw Failure(path + ": truncated IDX file: the header announces " + std::to_string(dims[0]) +
                    " items, the data ends after " + std::to_string(r0 + int64_t(got) / per_item));
    m.data.insert(m.data.end(), buf.begin(), buf.begin() + bytes);  // widens uint8 -> float
  }
  return m;
}

}  // namespace qvtool
