// The tool's .npy readers on arbitrary bytes: the first byte picks vectors or ids and the row limit,
// the rest is the file. A reader returns or throws qvtool's errors.
#include <stdexcept>

#include "fuzz_file.h"
#include "tools/quiver/npy_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int64_t max_rows = (data[0] & 0x80) ? 2 : qvtool::kAllRows;
  qvfuzz::MemoryFile file(data + 1, size - 1);
  try {
    if (data[0] & 1)
      qvtool::read_npy_ids(file.path(), max_rows);
    else
      qvtool::read_npy_vectors(file.path(), max_rows);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
