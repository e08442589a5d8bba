// SONG's hash codes (cpp/graph/hash_codes.h): every bit is the sign of a centred projection (against a
// float64 reference, away from ties), codes do not depend on the thread count, a vector's code is
// closer in Hamming distance to its near neighbours' than to far vectors', bad lengths are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpp/core/error.h"
#include "cpp/core/random.h"
#include "cpp/core/thread_pool.h"
#include "cpp/graph/hash_codes.h"

namespace quiver {
namespace {

std::vector<float> offset_rows(int64_t n, int64_t dim, uint64_t seed) {
  Random random(seed);
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (float& v : x) v = static_cast<float>(10 + random.uniform() * 2 - 1);
  return x;
}

int hamming(const uint32_t* a, const uint32_t* b, int64_t words) {
  int d = 0;
  for (int64_t i = 0; i < words; ++i) d += __builtin_popcount(a[i] ^ b[i]);
  return d;
}

TEST(HashCodes, BitsAreSignsOfCentredProjections) {
  const int64_t n = 301, dim = 37, bits = 96;
  const auto x = offset_rows(n, dim, 1);
  const HashProjection p = make_hash_projection(x.data(), n, dim, bits, 7);
  ASSERT_EQ(p.words(), 3);
  std::vector<double> mean(dim, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < dim; ++d) mean[d] += x[i * dim + d] / double(n);
  ThreadPool pool(2);
  std::vector<uint32_t> codes(n * p.words());
  hash_codes(pool, p, x.data(), n, codes.data());
  int64_t checked = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < bits; ++j) {
      double projection = 0, scale = 0;
      for (int64_t d = 0; d < dim; ++d) {
        projection += (x[i * dim + d] - mean[d]) * p.directions[j * dim + d];
        scale += std::fabs(x[i * dim + d] * p.directions[j * dim + d]);
      }
      if (std::fabs(projection) < 1e-4 * scale) continue;  // float rounding may decide a near tie
      EXPECT_EQ((codes[i * p.words() + j / 32] >> (j % 32)) & 1u, projection > 0 ? 1u : 0u) << i << " " << j;
      ++checked;
    }
  EXPECT_GT(checked, n * bits * 9 / 10);
}

TEST(HashCodes, SameCodesOnAnyThreadCountAndNearRowsAreNearInHamming) {
  const int64_t n = 1000, dim = 16, bits = 256;
  auto x = offset_rows(n, dim, 2);
  // Row i + 500 is row i moved a little.
  for (int64_t i = 0; i < 500; ++i)
    for (int64_t d = 0; d < dim; ++d) x[(i + 500) * dim + d] = x[i * dim + d] + 0.01f;
  const HashProjection p = make_hash_projection(x.data(), n, dim, bits, 3);
  ThreadPool one(1), three(3);
  std::vector<uint32_t> a(n * p.words()), b(n * p.words());
  hash_codes(one, p, x.data(), n, a.data());
  hash_codes(three, p, x.data(), n, b.data());
  EXPECT_EQ(a, b);
  int64_t near = 0, far = 0;
  for (int64_t i = 0; i < 500; ++i) {
    near += hamming(&a[i * p.words()], &a[(i + 500) * p.words()], p.words());
    far += hamming(&a[i * p.words()], &a[((i + 1) % 500) * p.words()], p.words());
  }
  EXPECT_LT(near * 5, far);
}

TEST(HashCodes, RefusesBadLengths) {
  const auto x = offset_rows(10, 4, 4);
  for (int64_t bits : {0, 16, 48, 1056})
    EXPECT_THROW(make_hash_projection(x.data(), 10, 4, bits, 1), Error) << bits;
}

}  // namespace
}  // namespace quiver
