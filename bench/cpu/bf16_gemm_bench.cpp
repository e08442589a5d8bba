/* Single-thread timing of gemm_abt_bf16 against OpenBLAS sgemm (gemm_abt) on distance-tile shapes.
   Not part of the CMake build. From the repository root, with the flags the library uses (the
   kernel file alone gets the AVX-512 ones):

     g++ -O3 -std=c++17 -I. -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512bf16 -mfma \
         -c cpp/blas/bf16_gemm_avx512bf16.cpp -o /tmp/bf16_gemm_kernel.o && \
     g++ -O3 -std=c++17 -I. bench/cpu/bf16_gemm_bench.cpp cpp/blas/bf16_gemm.cpp cpp/blas/gemm.cpp \
         /tmp/bf16_gemm_kernel.o -o /tmp/bf16_gemm_bench \
         -L/usr/lib/x86_64-linux-gnu/openblas-serial -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-serial \
         -lopenblas
     /tmp/bf16_gemm_bench               # the default shapes
     /tmp/bf16_gemm_bench 256 1024 784  # m n k

   Link the serial OpenBLAS, as the library does: a threaded one would not be a one-core baseline.
   Each number is the median of kSamples samples of about kSampleSeconds each. Check `uptime` first:
   the machine must be otherwise idle (the load average is printed before and after). alpha = -2
   (the L2 tile), ldc = n; both operands are packed before timing (pack_bf16 is timed apart). */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/cpu/timing.h"
#include "cpp/blas/bf16.h"
#include "cpp/blas/gemm.h"

namespace {

using bench::cpu_model;
using bench::load_average;
using bench::time_call;

void run(int64_t m, int64_t n, int64_t k) {
  std::mt19937 gen(static_cast<uint32_t>(m * 131 + n * 7 + k));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(n * k));
  for (auto& v : a) v = value(gen);
  for (auto& v : b) v = value(gen);
  std::vector<float> c32(static_cast<size_t>(m * n)), c16(static_cast<size_t>(m * n));
  const float alpha = -2.0f;

  const quiver::Bf16Matrix pa = quiver::pack_bf16(a.data(), m, k, nullptr);
  const quiver::Bf16Matrix pb = quiver::pack_bf16(b.data(), n, k, nullptr);
  std::vector<float> residual(static_cast<size_t>(m));
  const double tpack = time_call([&] { quiver::pack_bf16(a.data(), m, k, residual.data()); });
  const double t32 = time_call([&] {
    quiver::gemm_abt(m, n, k, alpha, a.data(), k, b.data(), k, c32.data(), n);
  });
  const double t16 = time_call([&] {
    quiver::gemm_abt_bf16(m, n, alpha, pa, 0, pb, 0, c16.data(), n);
  });
  // Largest difference from fp32, relative to the largest |C|: bf16 rounding, about 2^-9 / sqrt(k).
  double diff = 0, scale = 0;
  for (size_t i = 0; i < c32.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(c32[i]) - c16[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(c32[i])));
  }
  const double flop = 2.0 * m * n * k;
  std::printf("%4lld x %4lld x %4lld  sgemm %6.1f GFLOP/s  bf16 %6.1f GFLOP/s  x%.2f  "
              "max|diff|/max|C| %.1e  pack_bf16 %.2f ns/value\n",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
              flop / t32 * 1e-9, flop / t16 * 1e-9, t32 / t16, scale > 0 ? diff / scale : 0.0,
              tpack / static_cast<double>(m * k) * 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("machine: %s; load average before: %s\n", cpu_model().c_str(), load_average().c_str());
  std::printf("command:");
  for (int i = 0; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\nbaseline: OpenBLAS sgemm through quiver::gemm_abt, one thread; C = -2 A B^T\n");
  if (!quiver::bf16_gemm_available()) {
    std::printf("this processor lacks AVX-512 BF16: nothing to time\n");
    return 0;
  }
  if (argc == 4) {
    run(std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3]));
  } else {
    const int64_t shapes[][3] = {{256, 1024, 784}, {256, 2048, 128}, {512, 2048, 784}, {128, 1024, 100}};
    for (const auto& s : shapes) run(s[0], s[1], s[2]);
  }
  std::printf("load average after: %s\n", load_average().c_str());
  return 0;
}
