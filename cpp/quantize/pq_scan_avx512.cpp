// GCC 12 warns about the deliberately undefined pass-through operand inside its own AVX-512
// intrinsics (gathers, shifts): a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "cpp/quantize/pq_scan.h"
#include "cpp/quantize/product_quantizer.h"

namespace quiver {

namespace {

constexpr int kWidth = 16;        // codes per block: one key per lane of an AVX-512 register
constexpr int kGroup = 4;         // codes summed side by side in scalar registers (measured best)
constexpr int kBytesPerWord = 4;  // code bytes fetched per lane by one 32-bit gather

// Compares a block's keys with the threshold in one instruction and hands the passing ones over in
// order, re-checking each against the threshold the previous accepts may have lowered.
inline void accept_block(const float* key, int64_t first, ScanSink* sink) {
  unsigned mask = _mm512_cmp_ps_mask(_mm512_load_ps(key), _mm512_set1_ps(sink->threshold), _CMP_LT_OQ);
  while (mask) {
    const int l = __builtin_ctz(mask);
    mask &= mask - 1;
    if (key[l] < sink->threshold) sink->accept(sink, key[l], first + l);
  }
}

// key += table[s * 256 + byte] for the byte at `shift` bits of each lane of `word`.
inline __m512 add_entry(__m512 key, __m512i word, int shift, const float* sub_table) {
  const __m512i index = _mm512_and_si512(_mm512_srl_epi32(word, _mm_cvtsi32_si128(shift)),
                                         _mm512_set1_epi32(0xff));
  return _mm512_add_ps(key, _mm512_i32gather_ps(index, sub_table, 4));
}

}  // namespace

void pq_scan_avx512(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias,
                    int64_t first_index, ScanSink* sink) {
  int64_t j = 0;
  for (; j + kWidth <= n; j += kWidth) {
    alignas(64) float key[kWidth];
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

void pq_scan_avx512_gather(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias,
                           int64_t first_index, ScanSink* sink) {
  // The 32-bit code gathers below read 4 bytes of one code; shorter codes take the portable path.
  if (m < kBytesPerWord) return pq_scan_portable(codes, n, m, table, bias, first_index, sink);
  const __m512i offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(m)));
  const __m512i low_byte = _mm512_set1_epi32(0xff);
  const int64_t whole = m / kBytesPerWord * kBytesPerWord;  // sub-spaces read four at a time
  const int64_t rest = m - whole;
  int64_t j = 0;
  for (; j + kWidth <= n; j += kWidth) {
    const uint8_t* c = codes + j * m;
    __m512 key = _mm512_set1_ps(bias);
    for (int64_t s = 0; s < whole; s += kBytesPerWord) {
      // Lane l: bytes s .. s + 3 of code j + l.
      const __m512i word = _mm512_i32gather_epi32(offsets, c + s, 1);
      const float* t = table + s * kPqCentroids;
      key = _mm512_add_ps(key, _mm512_i32gather_ps(_mm512_and_si512(word, low_byte), t, 4));
      key = _mm512_add_ps(key, _mm512_i32gather_ps(
                                   _mm512_and_si512(_mm512_srli_epi32(word, 8), low_byte), t + kPqCentroids, 4));
      key = _mm512_add_ps(key, _mm512_i32gather_ps(
                                   _mm512_and_si512(_mm512_srli_epi32(word, 16), low_byte), t + 2 * kPqCentroids, 4));
      key = _mm512_add_ps(key, _mm512_i32gather_ps(_mm512_srli_epi32(word, 24), t + 3 * kPqCentroids, 4));
    }
    if (rest) {
      // The last four bytes of each code (never past its end); the rest sub-spaces are the top ones.
      const __m512i word = _mm512_i32gather_epi32(offsets, c + m - kBytesPerWord, 1);
      for (int64_t r = 0; r < rest; ++r)
        key = add_entry(key, word, static_cast<int>(8 * (kBytesPerWord - rest + r)),
                        table + (whole + r) * kPqCentroids);
    }
    alignas(64) float lane[kWidth];
    _mm512_store_ps(lane, key);
    accept_block(lane, first_index + j, sink);
  }
  if (j < n) pq_scan_portable(codes + j * m, n - j, m, table, bias, first_index + j, sink);
}

}  // namespace quiver
