#include <immintrin.h>

#include "cpp/quantize/pq_scan.h"
#include "cpp/quantize/product_quantizer.h"

namespace quiver {

namespace {

constexpr int kWidth = 8;         // codes per block: one key per lane of an AVX2 register
constexpr int kGroup = 4;         // codes summed side by side in scalar registers (measured best)
constexpr int kBytesPerWord = 4;  // code bytes fetched per lane by one 32-bit gather

inline void accept_block(const float* key, int64_t first, ScanSink* sink) {
  unsigned mask = static_cast<unsigned>(
      _mm256_movemask_ps(_mm256_cmp_ps(_mm256_load_ps(key), _mm256_set1_ps(sink->threshold), _CMP_LT_OQ)));
  while (mask) {
    const int l = __builtin_ctz(mask);
    mask &= mask - 1;
    if (key[l] < sink->threshold) sink->accept(sink, key[l], first + l);
  }
}

inline __m256 add_entry(__m256 key, __m256i word, int shift, const float* sub_table) {
  const __m256i index = _mm256_and_si256(_mm256_srl_epi32(word, _mm_cvtsi32_si128(shift)),
                                         _mm256_set1_epi32(0xff));
  return _mm256_add_ps(key, _mm256_i32gather_ps(sub_table, index, 4));
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

void pq_scan_avx2_gather(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias,
                         int64_t first_index, ScanSink* sink) {
  if (m < kBytesPerWord) return pq_scan_portable(codes, n, m, table, bias, first_index, sink);
  const __m256i offsets = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                             _mm256_set1_epi32(static_cast<int>(m)));
  const __m256i low_byte = _mm256_set1_epi32(0xff);
  const int64_t whole = m / kBytesPerWord * kBytesPerWord;
  const int64_t rest = m - whole;
  int64_t j = 0;
  for (; j + kWidth <= n; j += kWidth) {
    const uint8_t* c = codes + j * m;
    __m256 key = _mm256_set1_ps(bias);
    for (int64_t s = 0; s < whole; s += kBytesPerWord) {
      const __m256i word = _mm256_i32gather_epi32(reinterpret_cast<const int*>(c + s), offsets, 1);
      const float* t = table + s * kPqCentroids;
      key = _mm256_add_ps(key, _mm256_i32gather_ps(t, _mm256_and_si256(word, low_byte), 4));
      key = _mm256_add_ps(key, _mm256_i32gather_ps(t + kPqCentroids,
                                                   _mm256_and_si256(_mm256_srli_epi32(word, 8), low_byte), 4));
      key = _mm256_add_ps(key, _mm256_i32gather_ps(t + 2 * kPqCentroids,
                                                   _mm256_and_si256(_mm256_srli_epi32(word, 16), low_byte), 4));
      key = _mm256_add_ps(key, _mm256_i32gather_ps(t + 3 * kPqCentroids, _mm256_srli_epi32(word, 24), 4));
    }
    if (rest) {
      const __m256i word =
          _mm256_i32gather_epi32(reinterpret_cast<const int*>(c + m - kBytesPerWord), offsets, 1);
      for (int64_t r = 0; r < rest; ++r)
        key = add_entry(key, word, static_cast<int>(8 * (kBytesPerWord - rest + r)),
                        table + (whole + r) * kPqCentroids);
    }
    alignas(32) float lane[kWidth];
    _mm256_store_ps(lane, key);
    accept_block(lane, first_index + j, sink);
  }
  if (j < n) pq_scan_portable(codes + j * m, n - j, m, table, bias, first_index + j, sink);
}

}  // namespace quiver
