#include "texmex_io.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "binary_file.h"
#include "errors.h"

namespace qvtool {
namespace {

// Far above any real vector length, low enough that a garbage header cannot ask for a huge row.
constexpr int32_t kMaxDim = 1 << 20;
// Rows are read in blocks of about this many bytes to keep the staging buffer small.
constexpr size_t kBlockBytes = 8 << 20;

// Reads a TEXMEX file whose values are of type In and converts them to Out.
template <typename In, typename Out>
Matrix<Out> read_texmex(const std::string &path, int64_t max_rows) {
  InputFile in(path);
  Matrix<Out> m;
  if (in.size() == 0) return m;  // an empty file is an empty set
  unsigned char head[4];
  in.read(head, 4, "the first dimension");
  int32_t dim = load_le_i32(head);
  if (dim <= 0 || dim > kMaxDim)
    throw Failure(path + ": corrupt file: first vector has dimension " + std::to_string(dim));
  const int64_t record = 4 + int64_t(dim) * int64_t(sizeof(In));
  if (in.size() % record != 0)
    throw Failure(path + ": truncated or corrupt file: size " + std::to_string(in.size()) +
                  " is not a multiple of the record size " + std::to_string(record) +
                  " (dimension " + std::to_string(dim) + ")");
  m.rows = std::min<int64_t>(in.size() / record, max_rows);
  m.cols = dim;
  m.data.resize(static_cast<size_t>(m.rows * m.cols));
  in.seek(0);

  const int64_t block_rows = std::max<int64_t>(1, kBlockBytes / record);
  std::vector<unsigned char> buf(static_cast<size_t>(std::min(block_rows, m.rows) * record));
  for (int64_t r0 = 0; r0 < m.rows; r0 += block_rows) {
    const int64_t nr = std::min(block_rows, m.rows - r0);
    in.read(buf.data(), static_cast<size_t>(nr * record), "vector data");
    for (int64_t i = 0; i < nr; ++i) {
      const unsigned char *rec = buf.data() + i * record;
      if (load_le_i32(rec) != dim)
        throw Failure(path + ": corrupt file: vector " + std::to_string(r0 + i) + " has dimension " +
                      std::to_string(load_le_i32(rec)) + ", expected " + std::to_string(dim));
      Out *dst = m.row(r0 + i);
      for (int32_t j = 0; j < dim; ++j) {
        In v;
        std::memcpy(&v, rec + 4 + j * sizeof(In), sizeof(In));
        dst[j] = static_cast<Out>(v);
      }
    }
  }
  return m;
}

template <typename Out, typename In>
void write_texmex(const std::string &path, const Matrix<In> &m, Out (*convert)(In)) {
  OutputFile out(path);
  std::vector<unsigned char> rec(4 + m.cols * sizeof(Out));
  for (int64_t i = 0; i < m.rows; ++i) {
    store_le_i32(rec.data(), static_cast<int32_t>(m.cols));
    const In *src = m.row(i);
    for (int64_t j = 0; j < m.cols; ++j) {
      Out v = convert(src[j]);
      std::memcpy(rec.data() + 4 + j * sizeof(Out), &v, sizeof(Out));
    }
    out.write(rec.data(), rec.size());
  }
  out.commit();
}

float same_float(float v) { return v; }

int32_t narrow_id(int64_t v) {
  if (v < -1 || v > std::numeric_limits<int32_t>::max())
    throw Failure("id " + std::to_string(v) + " does not fit in an .ivecs file (int32)");
  return static_cast<int32_t>(v);
}

}  // namespace

FloatMatrix read_fvecs(const std::string &path, int64_t max_rows) {
  return read_texmex<float, float>(path, max_rows);
}

FloatMatrix read_bvecs(const std::string &path, int64_t max_rows) {
  return read_texmex<uint8_t, float>(path, max_rows);
}

IdMatrix read_ivecs(const std::string &path, int64_t max_rows) {
  return read_texmex<int32_t, int64_t>(path, max_rows);
}

void write_fvecs(const std::string &path, const FloatMatrix &m) {
  write_texmex<float, float>(path, m, same_float);
}

void write_ivecs(const std::string &path, const IdMatrix &m) {
  write_texmex<int32_t, int64_t>(path, m, narrow_id);
}

}  // namespace qvtool
