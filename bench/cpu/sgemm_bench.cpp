/* Single-thread timing of quiver's fp32 GEMM kernels (sgemm_abt_avx512, sgemm_abt_avx2) against
   OpenBLAS sgemm on distance-tile shapes. Not part of the CMake build. From the repository root, with
   the flags the library uses (each kernel file alone gets its instruction set's):

     g++ -O3 -std=c++17 -I. -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma \
         -c cpp/blas/sgemm_avx512.cpp -o /tmp/sgemm_avx512.o && \
     g++ -O3 -std=c++17 -I. -mavx2 -mfma -c cpp/blas/sgemm_avx2.cpp -o /tmp/sgemm_avx2.o && \
     g++ -O3 -std=c++17 -I. bench/cpu/sgemm_bench.cpp cpp/blas/gemm.cpp /tmp/sgemm_avx512.o \
         /tmp/sgemm_avx2.o -o /tmp/sgemm_bench \
         -L/usr/lib/x86_64-linux-gnu/openblas-serial -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-serial \
         -lopenblas
     /tmp/sgemm_bench               # the default shapes
     /tmp/sgemm_bench 256 1024 784  # m n k

   Link the serial OpenBLAS, as the library does: a threaded one would not be a one-core baseline.
   OpenBLAS is reached through gemm_abt with QUIVER_SIMD=portable set before its first call. Each
   number is the median of kSamples samples of about kSampleSeconds each. Check `uptime` first: the
   machine must be otherwise idle (the load average is printed before and after). alpha = -2 (the L2
   tile), lda = ldb = k, ldc = n. */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/cpu/timing.h"
#include "cpp/blas/gemm.h"
#include "cpp/blas/sgemm_kernels.h"

namespace {

using bench::cpu_model;
using bench::load_average;
using bench::time_call;

using Kernel = bool (*)(int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                        float*, int64_t);

void run(int64_t m, int64_t n, int64_t k, bool avx512, bool avx2) {
  std::mt19937 gen(static_cast<uint32_t>(m * 131 + n * 7 + k));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(n * k));
  for (auto& v : a) v = value(gen);
  for (auto& v : b) v = value(gen);
  std::vector<float> c_blas(static_cast<size_t>(m * n)), c(static_cast<size_t>(m * n));
  const float alpha = -2.0f;
  const double flop = 2.0 * m * n * k;
  const double t_blas = time_call([&] {
    quiver::gemm_abt(m, n, k, alpha, a.data(), k, b.data(), k, c_blas.data(), n);
  });
  std::printf("%4lld x %4lld x %4lld  openblas %6.1f GFLOP/s", static_cast<long long>(m),
              static_cast<long long>(n), static_cast<long long>(k), flop / t_blas * 1e-9);
  auto time_kernel = [&](Kernel kernel, const char* name) {
    const double t = time_call([&] { kernel(m, n, k, alpha, a.data(), k, b.data(), k, c.data(), n); });
    // Largest difference from OpenBLAS, relative to the largest |C|: fp32 summation order, ~2^-24 sqrt(k).
    double diff = 0, scale = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      diff = std::max(diff, std::fabs(static_cast<double>(c_blas[i]) - c[i]));
      scale = std::max(scale, std::fabs(static_cast<double>(c_blas[i])));
    }
    std::printf("  %s %6.1f GFLOP/s x%.2f (diff %.0e)", name, flop / t * 1e-9, t_blas / t,
                scale > 0 ? diff / scale : 0.0);
  };
  if (avx512) time_kernel(quiver::sgemm_abt_avx512, "avx512");
  if (avx2) time_kernel(quiver::sgemm_abt_avx2, "avx2");
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  setenv("QUIVER_SIMD", "portable", 1);  // gemm_abt is the OpenBLAS baseline
  std::printf("machine: %s; load average before: %s\n", cpu_model().c_str(), load_average().c_str());
  std::printf("command:");
  for (int i = 0; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\nbaseline: OpenBLAS sgemm (serial build) through quiver::gemm_abt, one thread; "
              "C = -2 A B^T; x = speed-up over it\n");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (argc == 4) {
    run(std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3]), avx512, avx2);
  } else {
    const int64_t shapes[][3] = {{256, 1024, 784}, {256, 2048, 128}, {128, 1024, 100}, {512, 2048, 784}};
    for (const auto& s : shapes) run(s[0], s[1], s[2], avx512, avx2);
  }
  std::printf("load average after: %s\n", load_average().c_str());
  return 0;
}
