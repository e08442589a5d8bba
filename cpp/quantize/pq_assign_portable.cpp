#include "cpp/quantize/pq_assign.h"

#include "cpp/quantize/product_quantizer.h"

namespace quiver {

namespace {
// Independent running minima, so that the compiler can keep them in one vector register.
constexpr int kLanes = 8;
}  // namespace

void pq_assign_portable(const float* x, int64_t stride, int64_t rows, int64_t dsub, const float* codebook_t,
                        uint8_t* codes, int64_t code_stride) {
  float distance[kPqCentroids];
  for (int64_t i = 0; i < rows; ++i) {
    const float* xi = x + i * stride;
    for (int64_t j = 0; j < kPqCentroids; ++j) distance[j] = 0;
    for (int64_t d = 0; d < dsub; ++d) {
      const float v = xi[d];
      const float* c = codebook_t + d * kPqCentroids;
      for (int64_t j = 0; j < kPqCentroids; ++j) {
        const float diff = v - c[j];
        distance[j] += diff * diff;
      }
    }
    float lane[kLanes];
    for (int l = 0; l < kLanes; ++l) lane[l] = distance[l];
    for (int64_t j = kLanes; j < kPqCentroids; j += kLanes)
      for (int l = 0; l < kLanes; ++l) lane[l] = distance[j + l] < lane[l] ? distance[j + l] : lane[l];
    float smallest = lane[0];
    for (int l = 1; l < kLanes; ++l) smallest = lane[l] < smallest ? lane[l] : smallest;
    int64_t best = 0;
    while (best + 1 < kPqCentroids && distance[best] != smallest) ++best;  // the first: ties go to the smaller index
    codes[i * code_stride] = static_cast<uint8_t>(best);
  }
}

}  // namespace quiver
