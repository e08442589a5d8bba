#include <immintrin.h>

#include "cpp/select/scan.h"

namespace quiver {

namespace {
constexpr int kWidth = 16;  // floats per AVX-512 register
}

void scan_avx512(const float* row, const float* bias, int64_t n, int64_t first_index,
                 ScanSink* sink) {
  int64_t j = 0;
  for (; j < n; j += kWidth) {
    // The tail is handled by a masked load, so every row length takes the same path.
    const __mmask16 valid =
        n - j >= kWidth ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1);
    __m512 keys = _mm512_maskz_loadu_ps(valid, row + j);
    if (bias) keys = _mm512_add_ps(keys, _mm512_maskz_loadu_ps(valid, bias + j));
    unsigned mask = _mm512_mask_cmp_ps_mask(valid, keys, _mm512_set1_ps(sink->threshold), _CMP_LT_OQ);
    if (!mask) continue;
    alignas(64) float lane[kWidth];
    _mm512_store_ps(lane, keys);
    while (mask) {
      const int l = __builtin_ctz(mask);
      mask &= mask - 1;
      // The threshold may have dropped since the comparison.
      if (lane[l] < sink->threshold) sink->accept(sink, lane[l], first_index + j + l);
    }
  }
}

}  // namespace quiver
