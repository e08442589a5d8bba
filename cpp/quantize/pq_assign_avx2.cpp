#include <immintrin.h>

#include <cfloat>

#include "cpp/quantize/pq_assign.h"
#include "cpp/quantize/product_quantizer.h"

namespace quiver {

namespace {
constexpr int kWidth = 8;      // floats per AVX2 register
constexpr int kRegisters = 8;  // 64 distances at a time: 16 ymm registers leave room for the operands
constexpr int kChunk = kWidth * kRegisters;
}  // namespace

void pq_assign_avx2(const float* x, int64_t stride, int64_t rows, int64_t dsub, const float* codebook_t,
                    uint8_t* codes, int64_t code_stride) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* xi = x + i * stride;
    float best_distance = FLT_MAX;
    int best = 0;
    bool first = true;
    for (int chunk = 0; chunk < kPqCentroids; chunk += kChunk) {
      __m256 distance[kRegisters];
      for (int r = 0; r < kRegisters; ++r) distance[r] = _mm256_setzero_ps();
      for (int64_t d = 0; d < dsub; ++d) {
        const __m256 v = _mm256_set1_ps(xi[d]);
        const float* c = codebook_t + d * kPqCentroids + chunk;
        for (int r = 0; r < kRegisters; ++r) {
          const __m256 diff = _mm256_sub_ps(v, _mm256_loadu_ps(c + r * kWidth));
          distance[r] = _mm256_fmadd_ps(diff, diff, distance[r]);
        }
      }
      __m256 low = distance[0];
      for (int r = 1; r < kRegisters; ++r) low = _mm256_min_ps(low, distance[r]);
      alignas(32) float lanes[kWidth];
      _mm256_store_ps(lanes, low);
      float smallest = lanes[0];
      for (int l = 1; l < kWidth; ++l) smallest = lanes[l] < smallest ? lanes[l] : smallest;
      // Strictly smaller than an earlier chunk's best: ties go to the smaller index.
      if (!first && !(smallest < best_distance)) continue;
      first = false;
      best_distance = smallest;
      const __m256 target = _mm256_set1_ps(smallest);
      for (int r = 0; r < kRegisters; ++r) {
        const unsigned mask =
            static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(distance[r], target, _CMP_EQ_OQ)));
        if (mask) {
          best = chunk + r * kWidth + __builtin_ctz(mask);
          break;
        }
      }
    }
    codes[i * code_stride] = static_cast<uint8_t>(best);
  }
}

}  // namespace quiver
