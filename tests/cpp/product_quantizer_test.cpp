// PQ training, encoding and decoding: codes against a float64 brute force (every SIMD kernel the
// processor runs), exact round trips of codewords, error falling with M, bad shapes, determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/quantize/pq_assign.h"
#include "cpp/quantize/product_quantizer.h"
#include "quantizer_testing.h"
#include "reference.h"

namespace quiver {
namespace {

using testing::cpu_context;
using testing::random_pq;

std::vector<PqAssignFn> assign_kernels() {
  std::vector<PqAssignFn> kernels{pq_assign_portable};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) kernels.push_back(pq_assign_avx2);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    kernels.push_back(pq_assign_avx512);
  return kernels;
}

// Squared distances in double from sub-vector x to the 256 codewords of sub-space s.
std::vector<double> reference_distances(const ProductQuantizer& pq, int64_t s, const float* x) {
  std::vector<double> d(kPqCentroids);
  for (int64_t j = 0; j < kPqCentroids; ++j)
    d[j] = testing::reference_distance(true, x, &pq.codebooks[(s * kPqCentroids + j) * pq.dsub()], pq.dsub());
  return d;
}

// The code must be the reference's nearest codeword, or on a near-tie (float rounding) one as near.
void expect_nearest(const ProductQuantizer& pq, const float* x, const uint8_t* code, const std::string& what) {
  for (int64_t s = 0; s < pq.m; ++s) {
    const std::vector<double> d = reference_distances(pq, s, x + s * pq.dsub());
    int64_t best = 0;
    for (int64_t j = 1; j < kPqCentroids; ++j)
      if (d[j] < d[best]) best = j;
    const double tolerance = 1e-5 * (1 + d[best]);
    if (code[s] != best)
      EXPECT_LE(d[code[s]], d[best] + tolerance) << what << " sub-space " << s << ": code " << int(code[s])
                                                 << " vs reference " << best;
  }
}

TEST(PqEncode, KernelsAndEncodeMatchBruteForce) {
  ThreadPool pool(2);
  const int64_t dim = 30;
  for (int64_t m : {1, 2, 3, 5, 10, 15, 30}) {  // dsub 30, 15, 10, 6, 3, 2, 1
    ProductQuantizer pq = random_pq(dim, m, static_cast<uint32_t>(m));
    const int64_t n = 203;
    auto x = testing::random_vectors(n, dim, static_cast<uint32_t>(100 + m));
    const int64_t dsub = pq.dsub();
    std::vector<uint8_t> codes(n * m);
    pq_encode(pq, pool, n, x.data(), codes.data());
    for (int64_t i = 0; i < n; ++i) expect_nearest(pq, &x[i * dim], &codes[i * m], "pq_encode m=" + std::to_string(m));

    // Each kernel directly, on sub-space 0 (the transposed layout they read).
    std::vector<float> transposed(kPqCentroids * dsub);
    for (int64_t j = 0; j < kPqCentroids; ++j)
      for (int64_t d = 0; d < dsub; ++d) transposed[d * kPqCentroids + j] = pq.codebooks[j * dsub + d];
    for (PqAssignFn kernel : assign_kernels()) {
      std::vector<uint8_t> sub_codes(n);
      kernel(x.data(), dim, n, dsub, transposed.data(), sub_codes.data(), 1);
      for (int64_t i = 0; i < n; ++i) {
        const std::vector<double> d = reference_distances(pq, 0, &x[i * dim]);
        const double best = *std::min_element(d.begin(), d.end());
        EXPECT_LE(d[sub_codes[i]], best + 1e-5 * (1 + best)) << "m=" << m << " row " << i;
      }
    }
  }
}

TEST(PqEncode, TiesGoToTheSmallerCodewordAndCodewordsRoundTrip) {
  ThreadPool pool(2);
  const int64_t dim = 12, m = 4, dsub = 3;
  ProductQuantizer pq = random_pq(dim, m, 5);
  // Codeword 200 of every sub-space duplicates codeword 7.
  for (int64_t s = 0; s < m; ++s)
    for (int64_t d = 0; d < dsub; ++d)
      pq.codebooks[(s * kPqCentroids + 200) * dsub + d] = pq.codebooks[(s * kPqCentroids + 7) * dsub + d];
  // Vectors made of codewords: code (i * 37 + s * 11) % 256, so every codeword value appears.
  const int64_t n = 300;
  std::vector<uint8_t> chosen(n * m);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = 0; s < m; ++s) chosen[i * m + s] = static_cast<uint8_t>((i * 37 + s * 11) % 256);
  std::vector<float> x(n * dim);
  pq_decode(pq, n, chosen.data(), x.data());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = 0; s < m; ++s)
      for (int64_t d = 0; d < dsub; ++d)
        ASSERT_EQ(x[i * dim + s * dsub + d], pq.codebooks[(s * kPqCentroids + chosen[i * m + s]) * dsub + d]);

  std::vector<float> transposed(kPqCentroids * dsub);
  for (int64_t j = 0; j < kPqCentroids; ++j)
    for (int64_t d = 0; d < dsub; ++d) transposed[d * kPqCentroids + j] = pq.codebooks[j * dsub + d];
  for (PqAssignFn kernel : assign_kernels()) {
    std::vector<uint8_t> sub_codes(n);
    kernel(x.data(), dim, n, dsub, transposed.data(), sub_codes.data(), 1);
    for (int64_t i = 0; i < n; ++i) {
      const int expected = chosen[i * m] == 200 ? 7 : chosen[i * m];
      EXPECT_EQ(sub_codes[i], expected) << "row " << i;
    }
  }
  std::vector<uint8_t> codes(n * m);
  pq_encode(pq, pool, n, x.data(), codes.data());
  for (int64_t i = 0; i < n * m; ++i) EXPECT_EQ(codes[i], chosen[i] == 200 ? 7 : chosen[i]) << i;
  std::vector<float> back(n * dim);
  pq_decode(pq, n, codes.data(), back.data());
  EXPECT_EQ(back, x);  // the duplicate decodes to the same values
}

// Mean squared reconstruction error of x under pq.
double quantization_error(const ProductQuantizer& pq, ThreadPool& pool, int64_t n, const float* x) {
  std::vector<uint8_t> codes(n * pq.m);
  std::vector<float> back(n * pq.dim);
  pq_encode(pq, pool, n, x, codes.data());
  pq_decode(pq, n, codes.data(), back.data());
  double sum = 0;
  for (int64_t i = 0; i < n * pq.dim; ++i) sum += (double(x[i]) - back[i]) * (double(x[i]) - back[i]);
  return sum / n;
}

TEST(PqTrain, RoundTripErrorFallsWithM) {
  Context context = cpu_context();
  const int64_t n = 1500, dim = 24;
  auto x = testing::random_vectors(n, dim, 77);
  double previous = 1e30;
  for (int64_t m : {1, 2, 4, 8, 24}) {
    PqTrainingOptions options;
    options.iterations = 10;
    ProductQuantizer pq = train_product_quantizer(context, dim, m, n, x.data(), 3, options);
    ASSERT_EQ(pq.codebooks.size(), static_cast<size_t>(m * kPqCentroids * (dim / m)));
    const double error = quantization_error(pq, context.pool(), n, x.data());
    EXPECT_LT(error, previous) << "m=" << m;
    previous = error;
  }
  // dsub = 1 with 1500 points and 256 levels per dimension: nearly lossless.
  EXPECT_LT(previous, 1e-3 * dim);
}

TEST(PqTrain, DeterministicForASeedWhateverTheThreads) {
  const int64_t n = 1100, dim = 20, m = 5;
  auto x = testing::random_vectors(n, dim, 8);
  // Both ways of sampling: a partial permutation (600 of 1100) and rejection sampling (256 of 1100).
  for (int64_t sample : {600, 256}) {
    PqTrainingOptions options;
    options.iterations = 4;
    options.max_training_vectors = sample;
    std::vector<float> first;
    for (int threads : {1, 3}) {
      Context context = cpu_context(threads);
      ProductQuantizer pq = train_product_quantizer(context, dim, m, n, x.data(), 42, options);
      if (first.empty()) first = pq.codebooks;
      EXPECT_EQ(pq.codebooks, first) << threads << " threads, sample " << sample;
    }
    Context context = cpu_context();
    EXPECT_NE(train_product_quantizer(context, dim, m, n, x.data(), 43, options).codebooks, first);
  }
}

TEST(PqTrain, ManySubQuantizersOfOneDimensionAndFewDistinctValues) {
  Context context = cpu_context();
  const int64_t n = 300, dim = 96, m = 96;
  // Only 3 distinct values per dimension: most of the 256 centroids have nothing to hold.
  std::vector<float> x(n * dim);
  for (int64_t i = 0; i < n * dim; ++i) x[i] = static_cast<float>((i * 7 + i / dim) % 3);
  PqTrainingOptions options;
  options.iterations = 3;
  ProductQuantizer pq = train_product_quantizer(context, dim, m, n, x.data(), 1, options);
  for (float c : pq.codebooks) ASSERT_TRUE(std::isfinite(c));
  // Not exactly 0: k-means splits a shared centroid by nudging it 1/1024 apart.
  EXPECT_NEAR(quantization_error(pq, context.pool(), n, x.data()), 0.0, 1e-4);
}

TEST(PqTrain, RejectsBadShapesAndTooFewVectors) {
  Context context = cpu_context();
  auto x = testing::random_vectors(300, 128, 1);
  auto message = [&](int64_t dim, int64_t m, int64_t n) {
    return testing::invalid_argument_message([&] { train_product_quantizer(context, dim, m, n, x.data(), 1); });
  };
  EXPECT_NE(message(128, 7, 300).find("M = 7 does not divide dim = 128"), std::string::npos);
  EXPECT_NE(message(128, 0, 300).find("M = 0"), std::string::npos);
  EXPECT_NE(message(128, 8, 100).find("PQ training needs at least 256 vectors, got 100"), std::string::npos);
  std::vector<float> bad(300 * 4, 1.0f);
  bad[5] = NAN;
  EXPECT_THROW(train_product_quantizer(context, 4, 2, 300, bad.data(), 1), Error);
}

}  // namespace
}  // namespace quiver
