// gemm_abt and the kernels behind it (blas/sgemm_kernels.h): results within fp32 accumulation bounds
// of a double-precision product on awkward shapes and strides, nothing written outside the C tile,
// nothing read from it; and results that do not depend on what other threads are doing (a
// single-threaded OpenBLAS without locking fails this), since gemm_abt is called from every thread
// of a context's pool at once.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <tuple>
#include <vector>

#include "cpp/blas/gemm.h"
#include "cpp/blas/sgemm_kernels.h"
#include "reference.h"

namespace quiver {
namespace {

using Kernel = bool (*)(int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                        float*, int64_t);

bool through_gemm_abt(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                      const float* b, int64_t ldb, float* c, int64_t ldc) {
  gemm_abt(m, n, k, alpha, a, lda, b, ldb, c, ldc);
  return true;
}

struct Named {
  Kernel kernel;
  const char* name;
};

// gemm_abt (whatever path it takes here) and each kernel this processor runs.
std::vector<Named> kernels() {
  std::vector<Named> out{{through_gemm_abt, "gemm_abt"}};
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    out.push_back({sgemm_abt_avx512, "avx512"});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    out.push_back({sgemm_abt_avx2, "avx2"});
  return out;
}

// Runs one product with padded strides and checks every C entry against a double-precision product:
// |error| <= (k + 2) * 2^-24 * |alpha| * sum_t |a_t b_t| (fp32 accumulation), and that the padding of
// C keeps its sentinel. The tile starts as NaN, so reading it would show.
void check(const Named& kn, int64_t m, int64_t n, int64_t k, float alpha) {
  const int64_t lda = k + 3, ldb = k + 5, ldc = n + 7;
  const auto a = testing::random_vectors(m, lda, static_cast<uint32_t>(m * 1000003 + k));
  const auto b = testing::random_vectors(n, ldb, static_cast<uint32_t>(n * 999983 + k + 1));
  constexpr float kSentinel = 12345.0f;
  std::vector<float> c(static_cast<size_t>(m * ldc), kSentinel);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(kn.kernel(m, n, k, alpha, a.data(), lda, b.data(), ldb, c.data(), ldc));
  int64_t bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t t = 0; t < k; ++t) {
        const double p = static_cast<double>(a[i * lda + t]) * b[j * ldb + t];
        sum += p;
        magnitude += std::fabs(p);
      }
      const double expected = alpha * sum;
      const double bound = (k + 2) * std::ldexp(1.0, -24) * std::fabs(alpha) * magnitude + 1e-30;
      const double got = c[i * ldc + j];
      if (!(std::fabs(got - expected) <= bound) && bad++ < 3)
        ADD_FAILURE() << kn.name << " " << m << " x " << n << " x " << k << ": C[" << i << "][" << j
                      << "] = " << got << ", expected " << expected << " +- " << bound;
    }
    for (int64_t j = n; j < ldc; ++j)
      if (c[i * ldc + j] != kSentinel && bad++ < 3)
        ADD_FAILURE() << kn.name << " " << m << " x " << n << " x " << k << ": wrote C[" << i << "]["
                      << j << "], past n";
  }
}

TEST(Gemm, MatchesDoublePrecisionOnAwkwardShapes) {
  const int64_t sizes[] = {1, 2, 7, 15, 16, 17, 31, 33, 100, 257, 784};
  // Every triple whose reference stays cheap, so each size meets small and large partners.
  constexpr int64_t kMaxWork = 4000000;
  for (const Named& kn : kernels()) {
    int shape = 0;
    for (int64_t m : sizes)
      for (int64_t n : sizes)
        for (int64_t k : sizes)
          if (m * n * k <= kMaxWork) check(kn, m, n, k, ++shape % 2 ? -2.0f : -1.0f);
    check(kn, 257, 784, 784, -2.0f);  // several row blocks and B panels, full micro-tiles
    check(kn, 33, 100, 2500, -1.0f);  // k past one block: C accumulated over blocks
    check(kn, 5, 9, 0, -2.0f);        // k = 0: zeros
  }
}

TEST(Gemm, ConcurrentCallsGiveTheSameResults) {
  for (const Named& kn : kernels()) {
    // The shape that raced in Debian's openblas-serial 0.3.21, and a few others.
    for (auto [m, n, k] :
         {std::tuple<int64_t, int64_t, int64_t>{16, 1024, 24}, {128, 1024, 24}, {7, 333, 5}, {40, 200, 1100}}) {
      const auto b = testing::random_vectors(n, k, 1);
      constexpr int kThreads = 8;
      std::vector<std::vector<float>> a(kThreads), expected(kThreads);
      for (int t = 0; t < kThreads; ++t) {
        a[t] = testing::random_vectors(m, k, 10 + t);
        expected[t].resize(m * n);
        ASSERT_TRUE(kn.kernel(m, n, k, -2.0f, a[t].data(), k, b.data(), k, expected[t].data(), n));
      }
      std::atomic<int> mismatches{0};
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
          std::vector<float> c(m * n);
          for (int round = 0; round < 100; ++round) {
            kn.kernel(m, n, k, -2.0f, a[t].data(), k, b.data(), k, c.data(), n);
            if (c != expected[t]) ++mismatches;
          }
        });
      for (auto& th : threads) th.join();
      EXPECT_EQ(mismatches.load(), 0) << kn.name << " " << m << " x " << n << " x " << k;
    }
  }
}

}  // namespace
}  // namespace quiver
