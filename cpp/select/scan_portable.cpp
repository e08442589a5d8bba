#include "cpp/select/scan.h"

namespace quiver {

void scan_portable(const float* row, const float* bias, int64_t n, int64_t first_index,
                   ScanSink* sink) {
  for (int64_t j = 0; j < n; ++j) {
    const float key = bias ? row[j] + bias[j] : row[j];
    if (key < sink->threshold) sink->accept(sink, key, first_index + j);
  }
}

}  // namespace quiver
