#include <immintrin.h>

#include "cpp/quantize/pq_scan.h"
#include "cpp/quantize/product_quantizer.h"

namespace quiver {

namespace {

constexpr int kWidth = 16;  // codes per block: one key per lane of an AVX-512 register
constexpr int kAlign = 64;

inline unsigned below_threshold(const float* key, float threshold) {
  return _mm512_cmp_ps_mask(_mm512_load_ps(key), _mm512_set1_ps(threshold), _CMP_LT_OQ);
}

#include "cpp/quantize/pq_scan_blocks.inc"

}  // namespace

void pq_scan_avx512(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias,
                    int64_t first_index, ScanSink* sink) {
  scan_blocks(codes, n, m, table, bias, first_index, sink);
}

}  // namespace quiver
