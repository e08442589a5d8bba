#include <immintrin.h>

#include "cpp/quantize/pq_scan.h"
#include "cpp/quantize/product_quantizer.h"

namespace quiver {

namespace {

constexpr int kWidth = 8;         // codes per block: one key per lane of an AVX2 register
constexpr int kGroup = 4;         // codes summed side by side in scalar registers (measured best)

inline void accept_block(const float* key, int64_t first, ScanSink* sink) {
  unsigned mask = static_cast<unsigned>(
      _mm256_movemask_ps(_mm256_cmp_ps(_mm256_load_ps(key), _mm256_set1_ps(sink->threshold), _CMP_LT_OQ)));
  while (mask) {
    const int l = __builtin_ctz(mask);
    mask &= mask - 1;
    if (key[l] < sink->threshold) sink->accept(sink, key[l], first + l);
  }
}

}  // namespace

void pq_scan_avx2(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias,
                  int64_t first_index, ScanSink* sink) {
  int64_t j = 0;
  for (; j + kWidth <= n; j += kWidth) {
    alignas(32) float key[kWidth];
    for (int g = 0; g < kWidth; g += kGroup) {
      const uint8_t* c = codes + (j + g) * m;
      float sum[kGroup];
      for (int l = 0; l < kGroup; ++l) sum[l] = bias;
      for (int64_t s = 0; s < m; ++s) {
        const float* t = table + s * kPqCentroids;
        for (int l = 0; l < kGroup; ++l) sum[l] += t[c[l * m + s]];
      }
      for (int l = 0; l < kGroup; ++l) key[g + l] = sum[l];
    }
    accept_block(key, first_index + j, sink);
  }
  if (j < n) pq_scan_portable(codes + j * m, n - j, m, table, bias, first_index + j, sink);
}

}  // namespace quiver
