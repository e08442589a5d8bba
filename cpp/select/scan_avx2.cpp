#include <immintrin.h>

#include "cpp/select/scan.h"

namespace quiver {

namespace {
constexpr int kWidth = 8;  // floats per AVX2 register
}

void scan_avx2(const float* row, const float* bias, int64_t n, int64_t first_index,
               ScanSink* sink) {
  int64_t j = 0;
  for (; j + kWidth <= n; j += kWidth) {
    __m256 keys = _mm256_loadu_ps(row + j);
    if (bias) keys = _mm256_add_ps(keys, _mm256_loadu_ps(bias + j));
    unsigned mask = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_cmp_ps(keys, _mm256_set1_ps(sink->threshold), _CMP_LT_OQ)));
    if (!mask) continue;
    alignas(32) float lane[kWidth];
    _mm256_store_ps(lane, keys);
    while (mask) {
      const int l = __builtin_ctz(mask);
      mask &= mask - 1;
      // The threshold may have dropped since the comparison.
      if (lane[l] < sink->threshold) sink->accept(sink, lane[l], first_index + j + l);
    }
  }
  for (; j < n; ++j) {
    const float key = bias ? row[j] + bias[j] : row[j];
    if (key < sink->threshold) sink->accept(sink, key, first_index + j);
  }
}

}  // namespace quiver
