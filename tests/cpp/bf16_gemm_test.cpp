// bfloat16 rounding and packing, and gemm_abt_bf16 against a double-precision reference computed
// from the bf16-rounded inputs, within the fp32-accumulation bound the header promises.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpp/blas/bf16.h"
#include "cpp/core/error.h"
#include "reference.h"

namespace quiver {
namespace {

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// The bf16 nearest to x, ties to even, by comparing the two candidates in double: an independent
// check of the bit trick in float_to_bf16 (finite x whose rounding is a normal bf16 or infinity).
uint16_t nearest_bf16(float x) {
  const uint32_t u = bits_of(x);
  const uint16_t down = static_cast<uint16_t>(u >> 16);  // toward zero
  const uint16_t up = static_cast<uint16_t>(down + 1);   // away from zero (may be infinity)
  const double d_down = std::fabs(static_cast<double>(x) - bf16_to_float(down));
  // Past the largest bf16 the next step is 2^128, which rounds to infinity: compare with that.
  const double up_value = (up & 0x7fffu) == 0x7f80u ? std::copysign(std::ldexp(1.0, 128), x)
                                                     : static_cast<double>(bf16_to_float(up));
  const double d_up = std::fabs(static_cast<double>(x) - up_value);
  if ((u & 0xffffu) == 0) return down;
  if (d_down < d_up) return down;
  if (d_up < d_down) return up;
  return (down & 1u) ? up : down;
}

TEST(Bf16Round, TiesGoToEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(float_of(0x3f807fffu)), 0x3f80);  // just below half: down
  EXPECT_EQ(float_to_bf16(float_of(0x3f808000u)), 0x3f80);  // tie, 0x3f80 even: down
  EXPECT_EQ(float_to_bf16(float_of(0x3f808001u)), 0x3f81);  // just above half: up
  EXPECT_EQ(float_to_bf16(float_of(0x3f818000u)), 0x3f82);  // tie, 0x3f81 odd: up
  EXPECT_EQ(float_to_bf16(float_of(0xbf818000u)), 0xbf82);  // the same for negatives
  EXPECT_EQ(float_to_bf16(float_of(0xbf808000u)), 0xbf80);
  EXPECT_EQ(float_to_bf16(float_of(0x3fff8000u)), 0x4000);  // tie that carries into the exponent
  EXPECT_EQ(float_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
}

TEST(Bf16Round, MatchesNearestOnRandomFloats) {
  std::mt19937 gen(7);
  int checked = 0;
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t u = gen();
    const uint32_t exponent = (u >> 23) & 0xffu;
    if (exponent == 0 || exponent == 0xff) continue;  // subnormal, inf, NaN: tested apart
    const float x = float_of(u);
    ASSERT_EQ(float_to_bf16(x), nearest_bf16(x)) << "x bits 0x" << std::hex << u;
    ++checked;
  }
  EXPECT_GT(checked, 1900000);
}

TEST(Bf16Round, RoundTripsExactValues) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    const float x = bf16_to_float(b);
    if (std::isnan(x) || (h & 0x7f80u) == 0) continue;  // NaN; zero and subnormals (flushed)
    ASSERT_EQ(float_to_bf16(x), b) << h;
  }
}

TEST(Bf16Round, LargeValuesSpecialsAndSubnormals) {
  const float bf16_max = bf16_to_float(0x7f7f);  // 3.3895e38
  EXPECT_FLOAT_EQ(bf16_max, 3.38953139e38f);
  EXPECT_EQ(float_to_bf16(bf16_max), 0x7f7f);
  EXPECT_EQ(float_to_bf16(3.39e38f), 0x7f7f);                     // above max, below half-way
  EXPECT_EQ(float_to_bf16(float_of(0x7f7f7fffu)), 0x7f7f);        // just below half-way
  EXPECT_EQ(float_to_bf16(float_of(0x7f7f8000u)), 0x7f80);        // half-way, odd: inf
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A signalling NaN whose payload sits in the low bits must not turn into infinity.
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(float_of(0x7f800001u)))));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(float_of(0xff800001u)))));
  // Results below the smallest normal bf16 become signed zeros; rounding up to it stays.
  EXPECT_EQ(float_to_bf16(1e-39f), 0x0000);
  EXPECT_EQ(float_to_bf16(-1e-39f), 0x8000);
  EXPECT_EQ(float_to_bf16(float_of(0x00008000u)), 0x0000);
  EXPECT_EQ(float_to_bf16(float_of(0x007fffffu)), 0x0080);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::min()), 0x0080);
}

TEST(Bf16Pack, ResidualIsTheRoundingErrorNorm) {
  for (int64_t k : {1, 2, 7, 33, 784}) {
    const int64_t n = 19;
    auto x = testing::random_vectors(n, k, static_cast<uint32_t>(k), 3.0f);
    x[0] = 1e-39f;  // flushed to zero: contributes its whole value
    std::vector<float> residual(static_cast<size_t>(n), -1.0f);
    const Bf16Matrix packed = pack_bf16(x.data(), n, k, residual.data());
    EXPECT_EQ(packed.rows, n);
    EXPECT_EQ(packed.cols, k);
    EXPECT_EQ(packed.pairs, (k + 1) / 2);
    for (int64_t i = 0; i < n; ++i) {
      double squared = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double e = static_cast<double>(x[i * k + j]) - bf16_to_float(float_to_bf16(x[i * k + j]));
        squared += e * e;
      }
      const double exact = std::sqrt(squared);
      const float r = residual[static_cast<size_t>(i)];
      EXPECT_GE(static_cast<double>(r), exact) << "k " << k << " row " << i;  // rounded up
      EXPECT_LE(static_cast<double>(r), exact * (1 + 1e-6)) << "k " << k << " row " << i;
      // bf16 keeps 8 significant bits: each error is at most 2^-8 of its value (here < 3).
      EXPECT_LE(r, std::sqrt(static_cast<float>(k)) * 3.0f / 256.0f);
    }
  }
  // Values that bf16 holds exactly leave no residual.
  const std::vector<float> exact = {1.0f, -0.5f, 3.0f, 0.0f, 1024.0f};
  float r = -1.0f;
  pack_bf16(exact.data(), 1, 5, &r);
  EXPECT_EQ(r, 0.0f);
}

TEST(Bf16Pack, EmptyShapes) {
  float r = -1.0f;
  const float x = 2.0f;
  const Bf16Matrix none = pack_bf16(nullptr, 0, 5, nullptr);
  EXPECT_EQ(none.rows, 0);
  const Bf16Matrix zero_k = pack_bf16(&x, 1, 0, &r);
  EXPECT_EQ(zero_k.pairs, 0);
  EXPECT_EQ(r, 0.0f);
  EXPECT_THROW(pack_bf16(&x, -1, 1, nullptr), Error);
}

// A: rows x k floats; the bf16-rounded values in double.
std::vector<double> rounded(const std::vector<float>& x) {
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = bf16_to_float(float_to_bf16(x[i]));
  return out;
}

// Runs gemm_abt_bf16 on rows [a_begin, a_begin + m) of a and [b_begin, b_begin + n) of b, with an
// ldc wider than n, and checks every entry against the double reference within
// (k + 4) * 2^-24 * |alpha| * sum |a_t b_t| (the bound in bf16.h), and the padding untouched.
void check_gemm(int64_t m, int64_t n, int64_t k, int64_t a_begin, int64_t b_begin, float alpha,
                uint32_t seed) {
  const int64_t a_rows = a_begin + m + 2, b_rows = b_begin + n + 3;
  const auto a = testing::random_vectors(a_rows, k, seed);
  const auto b = testing::random_vectors(b_rows, k, seed + 1);
  const Bf16Matrix pa = pack_bf16(a.data(), a_rows, k, nullptr);
  const Bf16Matrix pb = pack_bf16(b.data(), b_rows, k, nullptr);
  const auto ra = rounded(a), rb = rounded(b);

  const int64_t ldc = n + 5;
  const float sentinel = 12345.0f;
  std::vector<float> c(static_cast<size_t>(m * ldc), sentinel);
  gemm_abt_bf16(m, n, alpha, pa, a_begin, pb, b_begin, c.data(), ldc);

  const double unit = std::ldexp(1.0, -24);
  for (int64_t i = 0; i < m; ++i) {
    const double* ai = ra.data() + (a_begin + i) * k;
    for (int64_t j = 0; j < n; ++j) {
      const double* bj = rb.data() + (b_begin + j) * k;
      double dot = 0, magnitude = 0;
      for (int64_t t = 0; t < k; ++t) {
        dot += ai[t] * bj[t];
        magnitude += std::fabs(ai[t] * bj[t]);
      }
      const double expected = static_cast<double>(alpha) * dot;
      const double bound = (static_cast<double>(k) + 4) * unit * std::fabs(alpha) * magnitude + 1e-30;
      const float got = c[static_cast<size_t>(i * ldc + j)];
      ASSERT_LE(std::fabs(got - expected), bound)
          << "m " << m << " n " << n << " k " << k << " a_begin " << a_begin << " b_begin " << b_begin
          << " at (" << i << ", " << j << "): " << got << " vs " << expected;
    }
    for (int64_t j = n; j < ldc; ++j)
      ASSERT_EQ(c[static_cast<size_t>(i * ldc + j)], sentinel) << "wrote past n at row " << i;
  }
}

TEST(Bf16Gemm, AwkwardSizesAgainstReference) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "no AVX-512 BF16 on this processor";
  const int64_t sizes[] = {1, 2, 7, 15, 16, 17, 31, 33, 100, 257, 784};
  uint32_t seed = 1;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : sizes) {
        if (m * n * k > 20000000) continue;  // the double reference's time; 257^2 x 100 stays in
        const float alpha = (seed & 1) ? -2.0f : -1.0f;
        const int64_t a_begin = (seed % 3) * 5, b_begin = (seed % 5) * 7;  // 0 or unaligned
        check_gemm(m, n, k, a_begin, b_begin, alpha, seed);
        if (HasFatalFailure()) return;
        ++seed;
      }
}

TEST(Bf16Gemm, RowRangesAcrossPanels) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "no AVX-512 BF16 on this processor";
  uint32_t seed = 1000;
  // Ranges that start and end at every position within the 16-row panels of both operands.
  for (int64_t a_begin : {0, 1, 5, 15, 16, 17, 30})
    for (int64_t b_begin : {0, 1, 3, 15, 16, 17, 31, 32, 33})
      for (int64_t n : {1, 14, 16, 17, 40, 64}) {
        check_gemm(19, n, 37, a_begin, b_begin, -2.0f, seed++);
        if (HasFatalFailure()) return;
      }
}

TEST(Bf16Gemm, TileShapesAndLongK) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "no AVX-512 BF16 on this processor";
  // One k block up to k = 1024 (1001 is odd); above, several, summed into C (k = 2049: 3 blocks),
  // through full tiles and tiles at the ends of the column range; several row blocks of A (m = 530
  // at k = 2049: 2 blocks of 265); a whole tile of the usual shape.
  check_gemm(40, 70, 1001, 3, 9, -2.0f, 1);
  check_gemm(40, 100, 2049, 3, 0, -2.0f, 2);
  check_gemm(530, 35, 2049, 1, 2, -1.0f, 3);
  check_gemm(128, 1024, 100, 0, 0, -2.0f, 4);
}

TEST(Bf16Gemm, ZeroDepthWritesZeros) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "no AVX-512 BF16 on this processor";
  const Bf16Matrix a = pack_bf16(nullptr, 3, 0, nullptr), b = pack_bf16(nullptr, 4, 0, nullptr);
  std::vector<float> c(12, 7.0f);
  gemm_abt_bf16(3, 4, -2.0f, a, 0, b, 0, c.data(), 4);
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

TEST(Bf16Gemm, FiniteInputNeverGivesNaN) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "no AVX-512 BF16 on this processor";
  // Magnitudes from 1e-30 to 1e30 in A and to 1e-3 in B (products underflow, none overflows, nor
  // does a sum), zeros, subnormals, values near the bf16 maximum against zeros and small values.
  const int64_t m = 21, n = 37, k = 65;
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> a_exponent(-30.0f, 30.0f), b_exponent(-30.0f, -3.0f);
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(n * k));
  for (auto& v : a) v = ((gen() & 1) ? 1.0f : -1.0f) * std::pow(10.0f, a_exponent(gen));
  for (auto& v : b) v = ((gen() & 1) ? 1.0f : -1.0f) * std::pow(10.0f, b_exponent(gen));
  for (int64_t t = 0; t < k; ++t) {
    a[static_cast<size_t>(t)] = (t % 2 ? -1.0f : 1.0f) * 3.39e38f;  // row 0: near the bf16 max
    b[static_cast<size_t>(t)] = 0.0f;                                 // row 0: zeros
    b[static_cast<size_t>(k + t)] = 1e-39f;                           // row 1: subnormal (flushed)
    b[static_cast<size_t>(2 * k + t)] = 1e-3f;                        // row 2: small
  }
  std::vector<float> residual(static_cast<size_t>(m));
  const Bf16Matrix pa = pack_bf16(a.data(), m, k, residual.data());
  const Bf16Matrix pb = pack_bf16(b.data(), n, k, nullptr);
  for (float r : residual) EXPECT_TRUE(std::isfinite(r));
  std::vector<float> c(static_cast<size_t>(m * n));
  gemm_abt_bf16(m, n, -2.0f, pa, 0, pb, 0, c.data(), n);
  for (float v : c) ASSERT_FALSE(std::isnan(v));
  EXPECT_EQ(c[0], 0.0f);  // near-max row x zeros
  EXPECT_EQ(c[1], 0.0f);  // near-max row x flushed subnormals
  // Near-max row x 1e-3: alternating signs, 33 positive and 32 negative terms.
  const double expected = -2.0 * bf16_to_float(0x7f7f) * bf16_to_float(float_to_bf16(1e-3f));
  EXPECT_NEAR(c[2], expected, std::fabs(expected) * 1e-5);
}

TEST(Bf16Gemm, RejectsBadArguments) {
  if (!bf16_gemm_available()) GTEST_SKIP() << "no AVX-512 BF16 on this processor";
  const auto x = testing::random_vectors(20, 8, 1);
  const Bf16Matrix a = pack_bf16(x.data(), 20, 8, nullptr), b = pack_bf16(x.data(), 10, 8, nullptr);
  const Bf16Matrix other = pack_bf16(x.data(), 20, 7, nullptr);
  std::vector<float> c(400);
  EXPECT_THROW(gemm_abt_bf16(2, 2, 1.0f, a, 0, other, 0, c.data(), 2), Error);  // k differs
  EXPECT_THROW(gemm_abt_bf16(2, 2, 1.0f, a, 19, b, 0, c.data(), 2), Error);     // past a's rows
  EXPECT_THROW(gemm_abt_bf16(2, 2, 1.0f, a, 0, b, 9, c.data(), 2), Error);      // past b's rows
  EXPECT_THROW(gemm_abt_bf16(2, 2, 1.0f, a, -1, b, 0, c.data(), 2), Error);
  EXPECT_THROW(gemm_abt_bf16(2, 4, 1.0f, a, 0, b, 0, c.data(), 3), Error);      // ldc < n
  EXPECT_NO_THROW(gemm_abt_bf16(0, 4, 1.0f, a, 0, b, 0, c.data(), 4));
}

}  // namespace
}  // namespace quiver
