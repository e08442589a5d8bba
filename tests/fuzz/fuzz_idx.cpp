// The tool's IDX reader (MNIST format, raw or gzip) on arbitrary bytes: the first byte sets the row
// limit, the rest is the file. The reader returns or throws qvtool's errors.
#include <stdexcept>

#include "fuzz_file.h"
#include "tools/quiver/idx_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int64_t max_rows = (data[0] & 0x80) ? 2 : qvtool::kAllRows;
  qvfuzz::MemoryFile file(data + 1, size - 1);
  try {
    qvtool::read_idx_ubyte(file.path(), max_rows);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
