// The SIMD copies of exact kernels (distance/vectors_avx2.h, the table combination of
// quantize/pq_table_kernels.h) against scalar loops written as the portable ones: bit-identical.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cpp/core/simd_level.h"
#include "cpp/distance/vectors.h"
#include "cpp/distance/vectors_avx2.h"
#include "cpp/quantize/pq_table_kernels.h"
#include "reference.h"

namespace quiver {
namespace {

// The portable loops of vectors.cpp: eight partial sums, the tail first, then the partials in order.
float reference_squared_l2(const float* x, const float* y, int64_t dim) {
  float partial[8] = {};
  int64_t i = 0;
  for (; i + 8 <= dim; i += 8)
    for (int l = 0; l < 8; ++l) partial[l] += (x[i + l] - y[i + l]) * (x[i + l] - y[i + l]);
  float sum = 0;
  for (; i < dim; ++i) sum += (x[i] - y[i]) * (x[i] - y[i]);
  for (float p : partial) sum += p;
  return sum;
}

float reference_dot(const float* x, const float* y, int64_t dim) {
  float partial[8] = {};
  int64_t i = 0;
  for (; i + 8 <= dim; i += 8)
    for (int l = 0; l < 8; ++l) partial[l] += x[i + l] * y[i + l];
  float sum = 0;
  for (; i < dim; ++i) sum += x[i] * y[i];
  for (float p : partial) sum += p;
  return sum;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(SimdExactKernels, DistancesMatchThePortableLoopsBitForBit) {
  for (int64_t dim : {1, 7, 8, 31, 32, 33, 100, 784, 1023}) {
    const std::vector<float> x = testing::random_vectors(3, dim, 11 + static_cast<uint32_t>(dim));
    for (int64_t r = 1; r < 3; ++r) {
      const float* a = x.data();
      const float* b = x.data() + r * dim;
      EXPECT_TRUE(same_bits(squared_l2(a, b, dim), reference_squared_l2(a, b, dim))) << "dim " << dim;
      EXPECT_TRUE(same_bits(dot(a, b, dim), reference_dot(a, b, dim))) << "dim " << dim;
      if (simd_level() == SimdLevel::portable) continue;
      EXPECT_TRUE(same_bits(squared_l2_avx2(a, b, dim), reference_squared_l2(a, b, dim))) << "dim " << dim;
      EXPECT_TRUE(same_bits(dot_avx2(a, b, dim), reference_dot(a, b, dim))) << "dim " << dim;
    }
  }
}

TEST(SimdExactKernels, TableCombinationMatchesTheScalarLoop) {
  std::vector<PqTableKernels> sets = {pq_table_kernels_portable()};
  if (simd_level() != SimdLevel::portable) sets.push_back(pq_table_kernels_avx2());
  if (simd_level() == SimdLevel::avx512) sets.push_back(pq_table_kernels_avx512());
  for (int64_t size : {1, 15, 256, 1000, 14336}) {
    const std::vector<float> base = testing::random_vectors(1, size, 3);
    const std::vector<float> add = testing::random_vectors(1, size, 4);
    for (float alpha : {-2.0f, 2.0f, -1.0f, 0.5f}) {
      std::vector<float> want(static_cast<size_t>(size));
      for (int64_t i = 0; i < size; ++i) want[i] = base[i] + alpha * add[i];
      for (const PqTableKernels& kernels : sets) {
        std::vector<float> got(static_cast<size_t>(size));
        kernels.combine(size, base.data(), alpha, add.data(), got.data());
        for (int64_t i = 0; i < size; ++i) ASSERT_TRUE(same_bits(got[i], want[i])) << size << " " << alpha << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace quiver
