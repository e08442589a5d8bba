// The true metric distances over float vectors (metric/vector_distance.h) against double-precision
// sums, bit-for-bit agreement of the AVX2 copies with the portable order, and metric_distance's choice.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpp/core/error.h"
#include "cpp/core/simd_level.h"
#include "cpp/metric/vector_distance.h"
#include "cpp/metric/vector_distance_avx2.h"
#include "reference.h"

namespace quiver {
namespace {

const int64_t kDims[] = {1, 3, 7, 8, 15, 16, 17, 100, 1000};

double reference_l1(const float* x, const float* y, int64_t dim) {
  double sum = 0;
  for (int64_t i = 0; i < dim; ++i) sum += std::fabs(double(x[i]) - y[i]);
  return sum;
}

double reference_linf(const float* x, const float* y, int64_t dim) {
  double result = 0;
  for (int64_t i = 0; i < dim; ++i) result = std::max(result, std::fabs(double(x[i]) - y[i]));
  return result;
}

// The portable L1 loop of vector_distance.cpp: four groups of eight partial sums, then eight, then
// the tail; the tail first, then each lane's four groups in order.
float portable_l1(const float* x, const float* y, int64_t dim) {
  float p[4][8] = {};
  int64_t i = 0;
  for (; i + 32 <= dim; i += 32)
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 8; ++l) p[g][l] += std::fabs(x[i + 8 * g + l] - y[i + 8 * g + l]);
  for (; i + 8 <= dim; i += 8)
    for (int l = 0; l < 8; ++l) p[0][l] += std::fabs(x[i + l] - y[i + l]);
  float sum = 0;
  for (; i < dim; ++i) sum += std::fabs(x[i] - y[i]);
  for (int l = 0; l < 8; ++l) sum += ((p[0][l] + p[1][l]) + p[2][l]) + p[3][l];
  return sum;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(VectorDistance, MatchesDoublePrecision) {
  for (int64_t dim : kDims) {
    const std::vector<float> x = testing::random_vectors(4, dim, 21 + static_cast<uint32_t>(dim), 3.0f);
    for (int64_t r = 1; r < 4; ++r) {
      const float* a = x.data();
      const float* b = x.data() + r * dim;
      const double l2 = std::sqrt(testing::reference_distance(true, a, b, dim));
      const double l1 = reference_l1(a, b, dim);
      // float32 sums: a relative error of a few ulps per term at most.
      EXPECT_NEAR(euclidean(a, b, dim), l2, 1e-6 * l2 * dim + 1e-6) << "dim " << dim;
      EXPECT_NEAR(l1_distance(a, b, dim), l1, 1e-6 * l1 * dim + 1e-6) << "dim " << dim;
      // A maximum of exact float differences rounds once: within one float ulp of the double.
      EXPECT_NEAR(linf_distance(a, b, dim), reference_linf(a, b, dim), 1e-6 * reference_linf(a, b, dim))
          << "dim " << dim;
    }
  }
}

TEST(VectorDistance, ZeroBetweenEqualVectors) {
  for (int64_t dim : kDims) {
    const std::vector<float> x = testing::random_vectors(1, dim, 5);
    EXPECT_EQ(euclidean(x.data(), x.data(), dim), 0.0f);
    EXPECT_EQ(l1_distance(x.data(), x.data(), dim), 0.0f);
    EXPECT_EQ(linf_distance(x.data(), x.data(), dim), 0.0f);
  }
}

// One summation order at every SIMD level and on every call.
TEST(VectorDistance, AvxCopiesMatchThePortableOrderBitForBit) {
  for (int64_t dim : kDims) {
    const std::vector<float> x = testing::random_vectors(2, dim, 31 + static_cast<uint32_t>(dim), 100.0f);
    const float* a = x.data();
    const float* b = x.data() + dim;
    EXPECT_TRUE(same_bits(l1_distance(a, b, dim), portable_l1(a, b, dim))) << "dim " << dim;
    EXPECT_TRUE(same_bits(l1_distance(a, b, dim), l1_distance(a, b, dim))) << "dim " << dim;
    EXPECT_TRUE(same_bits(linf_distance(a, b, dim), static_cast<float>(reference_linf(a, b, dim))))
        << "dim " << dim;  // the largest difference, rounded once, is exactly what either loop returns
    if (simd_level() == SimdLevel::portable) continue;
    EXPECT_TRUE(same_bits(l1_distance_avx2(a, b, dim), portable_l1(a, b, dim))) << "dim " << dim;
    EXPECT_TRUE(same_bits(linf_distance_avx2(a, b, dim), linf_distance(a, b, dim))) << "dim " << dim;
  }
}

TEST(VectorDistance, MetricDistanceChoosesTheMetric) {
  const int64_t dim = 17;
  const std::vector<float> x = testing::random_vectors(2, dim, 9);
  const float* a = x.data();
  const float* b = x.data() + dim;
  EXPECT_TRUE(same_bits(metric_distance(Metric::l2, a, b, dim), euclidean(a, b, dim)));
  EXPECT_TRUE(same_bits(metric_distance(Metric::l1, a, b, dim), l1_distance(a, b, dim)));
  EXPECT_TRUE(same_bits(metric_distance(Metric::linf, a, b, dim), linf_distance(a, b, dim)));
  for (Metric m : {Metric::inner_product, Metric::cosine, Metric::edit}) {
    try {
      metric_distance(m, a, b, dim);
      ADD_FAILURE() << metric_name(m) << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument) << metric_name(m);
    }
  }
}

}  // namespace
}  // namespace quiver
