#include "cpp/io/index_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cpp/core/error.h"
#include "cpp/index/factory.h"
#include "cpp/io/bytes.h"
#include "cpp/io/checksum.h"

namespace quiver {

namespace {

constexpr char kMagic[4] = {'Q', 'V', 'I', 'X'};
constexpr uint32_t kMaxDescriptorLength = 1024;
constexpr size_t kChecksumBytes = sizeof(uint64_t);

std::string system_error(const std::string& path) { return path + ": " + std::strerror(errno); }

}  // namespace

std::vector<uint8_t> save_to_bytes(const Index& index) {
  ByteWriter out;
  out.raw(kMagic, sizeof kMagic);
  out.u32(kFormatVersion);
  out.u32(static_cast<uint32_t>(index.kind()));
  out.u32(static_cast<uint32_t>(index.metric()));
  out.i64(index.dim());
  out.i64(index.count());
  out.string(index.descriptor());
  index.save_payload(out);
  out.u64(checksum64(out.bytes().data(), out.bytes().size()));
  return std::move(out.bytes());
}

std::unique_ptr<Index> load_from_bytes(Context& context, const uint8_t* data, size_t size) {
  ByteReader header(data, size);
  if (size < sizeof kMagic || std::memcmp(data, kMagic, sizeof kMagic) != 0)
    fail(Status::corrupt_data, "not a quiver index (bad magic bytes)");
  header.u32("magic");
  // The version comes before the checksum: another version may checksum differently.
  const uint32_t version = header.u32("format version");
  if (version != kFormatVersion)
    fail(Status::version_mismatch, "index format version ", version,
         " is not readable by this library (which reads version ", kFormatVersion, ")");
  if (size < header.position() + kChecksumBytes) fail(Status::corrupt_data, "truncated index");
  const size_t body = size - kChecksumBytes;
  uint64_t stored;
  std::memcpy(&stored, data + body, kChecksumBytes);
  // A fuzzing build (tests/fuzz) reads past a wrong checksum, so that mutated bytes reach the parsers
  // below; every check after this one must hold on its own.
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  if (checksum64(data, body) != stored)
    fail(Status::corrupt_data, "corrupt index: checksum mismatch (damaged or truncated data)");
#else
  (void)stored;
#endif

  ByteReader in(data, body);
  in.u32("magic");
  in.u32("format version");
  const uint32_t kind = in.u32("kind");
  const uint32_t metric = in.u32("metric");
  const int64_t dim = in.i64("dim");
  const int64_t count = in.i64("count");
  const std::string descriptor = in.string("descriptor", kMaxDescriptorLength);
  if (!is_known_metric(static_cast<int32_t>(metric)))
    fail(Status::corrupt_data, "corrupt index: metric ", metric);
  const bool dim_ok = holds_strings(static_cast<Metric>(metric)) ? dim == 0 : dim >= 1 && dim <= kMaxDim;
  if (!dim_ok) fail(Status::corrupt_data, "corrupt index: dim ", dim);
  // Every kind stores at least an 8-byte id an object; the kind's payload checks the rest exactly.
  if (count < 0 || static_cast<uint64_t>(count) > in.remaining() / sizeof(int64_t))
    fail(Status::corrupt_data, "corrupt index: count ", count, " exceeds the data");

  std::unique_ptr<Index> index;
  try {
    index = create_index(context, descriptor, dim, static_cast<Metric>(metric));
  } catch (const Error& e) {
    if (e.status() != Status::invalid_argument) throw;
    fail(Status::corrupt_data, "corrupt index: ", e.what());
  }
  if (static_cast<uint32_t>(index->kind()) != kind)
    fail(Status::corrupt_data, "corrupt index: kind ", kind, " does not match descriptor \"", descriptor, "\"");
  index->load_payload(in, count);
  if (in.remaining() != 0) fail(Status::corrupt_data, "corrupt index: ", in.remaining(), " unexpected bytes");
  return index;
}

void save_to_file(const Index& index, const std::string& path) {
  const std::vector<uint8_t> bytes = save_to_bytes(index);
  static std::atomic<unsigned> counter{0};
  const std::string temporary =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  FILE* file = std::fopen(temporary.c_str(), "wb");
  if (!file) fail(Status::io_error, "cannot create ", system_error(temporary));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size() &&
                       std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
  const std::string write_error = written ? "" : system_error(temporary);
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) {
    std::remove(temporary.c_str());
    fail(Status::io_error, "cannot write ", written ? system_error(temporary) : write_error);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string message = system_error(path);
    std::remove(temporary.c_str());
    fail(Status::io_error, "cannot rename the written index to ", message);
  }
}

std::unique_ptr<Index> load_from_file(Context& context, const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) fail(Status::io_error, "cannot open ", system_error(path));
  struct stat info;
  if (::fstat(::fileno(file), &info) != 0 || !S_ISREG(info.st_mode)) {
    std::fclose(file);
    fail(Status::io_error, path, " is not a regular file");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(info.st_size));
  const bool failed = std::fread(bytes.data(), 1, bytes.size(), file) != bytes.size();
  const std::string message = system_error(path);
  std::fclose(file);
  if (failed) fail(Status::io_error, "cannot read ", message);
  return load_from_bytes(context, bytes.data(), bytes.size());
}

}  // namespace quiver
