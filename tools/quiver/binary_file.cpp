#include "binary_file.h"

#include <cerrno>
#include <cstring>

#include "errors.h"

namespace qvtool {

static std::string os_error(const std::string &path, const char *action) {
  return path + ": cannot " + action + ": " + std::strerror(errno);
}

InputFile::InputFile(const std::string &path) : path_(path) {
  f_ = std::fopen(path.c_str(), "rb");
  if (!f_) throw Failure(os_error(path, "open"));
  if (fseeko(f_, 0, SEEK_END) != 0 || (size_ = ftello(f_)) < 0 || fseeko(f_, 0, SEEK_SET) != 0) {
    std::fclose(f_);
    throw Failure(os_error(path, "determine the size of"));
  }
}

InputFile::~InputFile() {
  if (f_) std::fclose(f_);
}

void InputFile::read(void *dst, size_t n, const char *what) {
  if (n == 0) return;
  size_t got = std::fread(dst, 1, n, f_);
  if (got != n) {
    if (std::ferror(f_)) throw Failure(os_error(path_, "read"));
    throw Failure(path_ + ": truncated file: " + what + " needs " + std::to_string(n) +
                  " bytes, only " + std::to_string(got) + " left");
  }
}

void InputFile::seek(int64_t offset) {
  if (fseeko(f_, offset, SEEK_SET) != 0) throw Failure(os_error(path_, "seek in"));
}

OutputFile::OutputFile(const std::string &path) : path_(path), tmp_(path + ".tmp") {
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) throw Failure(os_error(tmp_, "create"));
}

OutputFile::~OutputFile() {
  if (f_) {  // not committed: an exception is unwinding, drop the partial file
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

void OutputFile::write(const void *src, size_t n) {
  if (n && std::fwrite(src, 1, n, f_) != n) throw Failure(os_error(tmp_, "write"));
}

void OutputFile::commit() {
  int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0) {
    std::remove(tmp_.c_str());
    throw Failure(os_error(tmp_, "write"));
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::remove(tmp_.c_str());
    throw Failure(os_error(path_, "rename the finished file to"));
  }
}

}  // namespace qvtool
