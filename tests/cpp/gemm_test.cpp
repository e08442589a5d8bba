// gemm_abt is called from every thread of a context's pool at once; its results must not depend on
// what other threads are doing (a single-threaded OpenBLAS without locking fails this).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "cpp/blas/gemm.h"
#include "reference.h"

namespace quiver {
namespace {

TEST(Gemm, ConcurrentCallsGiveTheSameResults) {
  // The shape that raced in Debian's openblas-serial 0.3.21, and a few others.
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{16, 1024, 24}, {128, 1024, 24}, {7, 333, 5}}) {
    const auto b = testing::random_vectors(n, k, 1);
    constexpr int kThreads = 8;
    std::vector<std::vector<float>> a(kThreads), expected(kThreads);
    for (int t = 0; t < kThreads; ++t) {
      a[t] = testing::random_vectors(m, k, 10 + t);
      expected[t].resize(m * n);
      gemm_abt(m, n, k, -2.0f, a[t].data(), k, b.data(), k, expected[t].data(), n);
    }
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        std::vector<float> c(m * n);
        for (int round = 0; round < 100; ++round) {
          gemm_abt(m, n, k, -2.0f, a[t].data(), k, b.data(), k, c.data(), n);
          if (c != expected[t]) ++mismatches;
        }
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0) << m << " x " << n << " x " << k;
  }
}

}  // namespace
}  // namespace quiver
