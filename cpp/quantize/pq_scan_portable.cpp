#include "cpp/quantize/pq_scan.h"

#include "cpp/quantize/product_quantizer.h"

namespace quiver {

namespace {
// Codes summed side by side: independent additions hide the latency of each one (every key is still
// its own left-to-right sum).
constexpr int kLanes = 8;
}  // namespace

void pq_scan_portable(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias,
                      int64_t first_index, ScanSink* sink) {
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const uint8_t* c = codes + j * m;
    float key[kLanes];
    for (int l = 0; l < kLanes; ++l) key[l] = bias;
    for (int64_t s = 0; s < m; ++s) {
      const float* t = table + s * kPqCentroids;
      for (int l = 0; l < kLanes; ++l) key[l] += t[c[l * m + s]];
    }
    for (int l = 0; l < kLanes; ++l)
      if (key[l] < sink->threshold) sink->accept(sink, key[l], first_index + j + l);
  }
  for (; j < n; ++j) {
    const uint8_t* c = codes + j * m;
    float key = bias;
    for (int64_t s = 0; s < m; ++s) key += table[s * kPqCentroids + c[s]];
    if (key < sink->threshold) sink->accept(sink, key, first_index + j);
  }
}

}  // namespace quiver
