#include "npy_io.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "binary_file.h"
#include "errors.h"

namespace qvtool {
namespace {

// A header larger than this is not something NumPy writes for a 2-D array: treat it as corrupt.
constexpr uint32_t kMaxHeaderBytes = 1 << 16;
constexpr size_t kBlockBytes = 8 << 20;

enum class Dtype { F32, F64, U8, I32, I64 };

struct NpyHeader {
  Dtype dtype;
  size_t item = 0;
  int64_t rows = 0, cols = 0;
  int64_t data_offset = 0;
};

// Returns the text after `'key':` in the header dict, or throws.
std::string value_after(const std::string &header, const std::string &key, const std::string &path) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw Failure(path + ": corrupt .npy header: no '" + key + "' field");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) throw Failure(path + ": corrupt .npy header near '" + key + "'");
  size_t start = header.find_first_not_of(" ", colon + 1);
  return start == std::string::npos ? "" : header.substr(start);
}

NpyHeader parse_header(InputFile &in) {
  const std::string &path = in.path();
  unsigned char pre[10];
  in.read(pre, 10, "the .npy preamble");
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0) throw Failure(path + ": not a .npy file (bad magic)");
  const int major = pre[6];
  uint32_t header_len;
  int64_t offset;
  if (major == 1) {
    header_len = pre[8] | uint32_t(pre[9]) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    unsigned char extra[2];
    in.read(extra, 2, "the .npy header length");
    header_len = pre[8] | uint32_t(pre[9]) << 8 | uint32_t(extra[0]) << 16 | uint32_t(extra[1]) << 24;
    offset = 12;
  } else {
    throw Failure(path + ": unsupported .npy format version " + std::to_string(major));
  }
  if (header_len > kMaxHeaderBytes) throw Failure(path + ": corrupt .npy header (too long)");
  std::string header(header_len, '\0');
  in.read(header.data(), header_len, "the .npy header");

  NpyHeader h;
  h.data_offset = offset + header_len;
  std::string descr = value_after(header, "descr", path);
  if (descr.size() < 2 || descr[0] != '\'') throw Failure(path + ": corrupt .npy header (descr)");
  descr = descr.substr(1, descr.find('\'', 1) - 1);
  if (descr == "<f4") h.dtype = Dtype::F32, h.item = 4;
  else if (descr == "<f8") h.dtype = Dtype::F64, h.item = 8;
  else if (descr == "|u1" || descr == "<u1") h.dtype = Dtype::U8, h.item = 1;
  else if (descr == "<i4") h.dtype = Dtype::I32, h.item = 4;
  else if (descr == "<i8") h.dtype = Dtype::I64, h.item = 8;
  else
    throw Failure(path + ": unsupported .npy dtype '" + descr +
                  "' (supported: little-endian float32, float64, uint8, int32, int64)");

  if (value_after(header, "fortran_order", path).rfind("False", 0) != 0)
    throw Failure(path + ": Fortran-order .npy arrays are not supported; save with C order");

  std::string shape = value_after(header, "shape", path);
  if (shape.empty() || shape[0] != '(') throw Failure(path + ": corrupt .npy header (shape)");
  shape = shape.substr(1, shape.find(')') - 1);
  std::vector<int64_t> dims;
  for (size_t pos = 0; pos < shape.size();) {
    size_t comma = shape.find(',', pos);
    if (comma == std::string::npos) comma = shape.size();
    std::string tok = shape.substr(pos, comma - pos);
    tok.erase(std::remove(tok.begin(), tok.end(), ' '), tok.end());
    if (!tok.empty()) {
      if (tok.find_first_not_of("0123456789") != std::string::npos || tok.size() > 15)
        throw Failure(path + ": corrupt .npy header (shape '" + shape + "')");
      dims.push_back(std::stoll(tok));
    }
    pos = comma + 1;
  }
  if (dims.size() != 2)
    throw Failure(path + ": .npy array has " + std::to_string(dims.size()) +
                  " dimensions; a 2-D array (rows x dim) is needed");
  h.rows = dims[0];
  h.cols = dims[1];
  if (h.cols > 0 && h.rows > (INT64_MAX / int64_t(h.item)) / h.cols)
    throw Failure(path + ": corrupt .npy header (shape too large)");
  const int64_t need = h.rows * h.cols * int64_t(h.item);
  if (h.cols == 0 && h.rows > 0) throw Failure(path + ": .npy array has zero columns");
  if (in.size() - h.data_offset < need)
    throw Failure(path + ": truncated .npy file: data needs " + std::to_string(need) +
                  " bytes, only " + std::to_string(in.size() - h.data_offset) + " present");
  return h;
}

template <typename In, typename Out>
void convert_block(const unsigned char *src, Out *dst, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    In v;
    std::memcpy(&v, src + i * sizeof(In), sizeof(In));
    dst[i] = static_cast<Out>(v);
  }
}

template <typename Out>
Matrix<Out> read_npy(const std::string &path, int64_t max_rows, bool ids_only) {
  InputFile in(path);
  NpyHeader h = parse_header(in);
  if (ids_only && (h.dtype == Dtype::F32 || h.dtype == Dtype::F64))
    throw Failure(path + ": expected integer ids, found a floating-point .npy array");
  Matrix<Out> m;
  m.rows = std::min(h.rows, max_rows);
  m.cols = h.cols;
  m.data.resize(static_cast<size_t>(m.rows * m.cols));
  in.seek(h.data_offset);

  const size_t total = m.data.size();
  const size_t block = std::max<size_t>(1, kBlockBytes / h.item);
  std::vector<unsigned char> buf(std::min(block, total) * h.item);
  for (size_t done = 0; done < total; done += block) {
    const size_t count = std::min(block, total - done);
    in.read(buf.data(), count * h.item, "array data");
    Out *dst = m.data.data() + done;
    switch (h.dtype) {
      case Dtype::F32: convert_block<float>(buf.data(), dst, count); break;
      case Dtype::F64: convert_block<double>(buf.data(), dst, count); break;
      case Dtype::U8: convert_block<uint8_t>(buf.data(), dst, count); break;
      case Dtype::I32: convert_block<int32_t>(buf.data(), dst, count); break;
      case Dtype::I64: convert_block<int64_t>(buf.data(), dst, count); break;
    }
  }
  return m;
}

}  // namespace

FloatMatrix read_npy_vectors(const std::string &path, int64_t max_rows) {
  return read_npy<float>(path, max_rows, false);
}

IdMatrix read_npy_ids(const std::string &path, int64_t max_rows) {
  return read_npy<int64_t>(path, max_rows, true);
}

}  // namespace qvtool
