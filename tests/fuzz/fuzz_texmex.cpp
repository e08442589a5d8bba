// The tool's TEXMEX readers (.fvecs, .bvecs, .ivecs) on arbitrary bytes: the first byte picks the
// reader and the row limit, the rest is the file. A reader returns or throws qvtool's errors.
#include <stdexcept>

#include "fuzz_file.h"
#include "tools/quiver/texmex_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int reader = data[0] % 3;
  const int64_t max_rows = (data[0] & 0x80) ? 2 : qvtool::kAllRows;
  qvfuzz::MemoryFile file(data + 1, size - 1);
  try {
    if (reader == 0) qvtool::read_fvecs(file.path(), max_rows);
    if (reader == 1) qvtool::read_bvecs(file.path(), max_rows);
    if (reader == 2) qvtool::read_ivecs(file.path(), max_rows);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
