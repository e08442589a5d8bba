/* Single-thread timing of the IVF-PQ inner loops: the PQ scan kernels (pq_scan_portable, _avx2,
   _avx512) in ns per code, the look-up tables per query, and PQ encoding per vector. Not part of the
   CMake build. From the repository root, after building the static library (build/ or any build
   folder; CUDA not needed):

     cmake --build build -j2 --target quiver_static && \
     g++ -O3 -std=c++17 -I. -Ibuild/include bench/cpu/pq_scan_bench.cpp build/libquiver.a \
         $(grep -v '^#' build/quiver_link.txt) -o /tmp/pq_scan_bench
     /tmp/pq_scan_bench              # m = 16, 32, 56, 64
     /tmp/pq_scan_bench 8 96         # other code lengths

   Each number is the median of kSamples samples of about kSampleSeconds each (bench/cpu/timing.h).
   Check `uptime` first: the machine must be otherwise idle (the load average is printed before and
   after). Scans run over random codes and a random table in two settings: "top-10", a k-selection
   sink whose threshold falls to the 10th best key (what a search does), and "all", a threshold no key
   passes (the bare cost of the sums). Lists of 1 000 codes (one IVF list of a 1M-vector index with
   1024 lists; codes and table in L1/L2) and 100 000 codes (streaming from L3/memory). The baseline is
   the portable kernel (8 codes summed side by side in scalar code); "naive" is the textbook loop, one
   code at a time; avx2 / avx512 sum in scalar registers and compare a block of keys with one vector
   instruction (what best_pq_scan picks); (vector gathers, tried, were 1.6-2x slower on Zen 4). The
   tables are timed per call (one query, or one list), "batched" per query of a batch of 100;
   encoding per vector with each assignment kernel. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/cpu/timing.h"
#include "cpp/core/thread_pool.h"
#include "cpp/quantize/pq_assign.h"
#include "cpp/quantize/pq_scan.h"
#include "cpp/quantize/pq_tables.h"
#include "cpp/quantize/product_quantizer.h"

namespace {

using bench::cpu_model;
using bench::load_average;
using bench::time_call;
using quiver::kPqCentroids;

// k-selection of the k smallest keys: a sorted array, its last entry the threshold once full.
struct TopK {
  quiver::ScanSink sink;  // first member
  int k = 10;
  int size = 0;
  float keys[10];
  static void accept(quiver::ScanSink* s, float key, int64_t) {
    auto* self = reinterpret_cast<TopK*>(s);
    int i = self->size < self->k ? self->size++ : self->k - 1;
    while (i > 0 && self->keys[i - 1] > key) {
      self->keys[i] = self->keys[i - 1];
      --i;
    }
    self->keys[i] = key;
    if (self->size == self->k) s->threshold = self->keys[self->k - 1];
  }
};

void naive_scan(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias, int64_t first,
                quiver::ScanSink* sink) {
  for (int64_t j = 0; j < n; ++j) {
    float key = bias;
    for (int64_t s = 0; s < m; ++s) key += table[s * kPqCentroids + codes[j * m + s]];
    if (key < sink->threshold) sink->accept(sink, key, first + j);
  }
}

struct Kernel {
  const char* name;
  quiver::PqScanFn fn;
};

void bench_scan(int64_t m, int64_t n, const std::vector<Kernel>& kernels) {
  std::mt19937 gen(static_cast<uint32_t>(m * 1000 + n));
  std::uniform_real_distribution<float> value(0.0f, 1.0f);
  std::vector<float> table(m * kPqCentroids);
  for (auto& v : table) v = value(gen);
  std::vector<uint8_t> codes(n * m);
  for (auto& c : codes) c = static_cast<uint8_t>(gen());
  for (bool topk : {true, false}) {
    std::printf("m = %3lld, n = %6lld, %-6s", static_cast<long long>(m), static_cast<long long>(n),
                topk ? "top-10" : "all");
    double baseline = 0;
    for (const Kernel& kernel : kernels) {
      const double t = time_call([&] {
        TopK sink;
        sink.sink = {topk ? 1e30f : -1e30f, &TopK::accept};
        kernel.fn(codes.data(), n, m, table.data(), 0.5f, 0, &sink.sink);
      });
      const double ns = t / n * 1e9;
      if (std::string(kernel.name) == "portable") baseline = ns;
      std::printf("  %s %6.2f ns/code", kernel.name, ns);
      if (baseline > 0 && std::string(kernel.name) != "portable" && std::string(kernel.name) != "naive")
        std::printf(" (x%.2f)", baseline / ns);
    }
    std::printf("\n");
  }
}

void bench_tables(int64_t dim, int64_t m) {
  quiver::ThreadPool pool(1);
  quiver::ProductQuantizer pq;
  pq.dim = dim;
  pq.m = m;
  std::mt19937 gen(static_cast<uint32_t>(dim + m));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  pq.codebooks.resize(m * kPqCentroids * (dim / m));
  for (auto& v : pq.codebooks) v = value(gen);
  const int64_t nq = 100;
  std::vector<float> x(nq * dim);
  for (auto& v : x) v = value(gen);
  std::vector<float> table(m * kPqCentroids), tables(nq * m * kPqCentroids), other(m * kPqCentroids);
  const double ip = time_call([&] { quiver::pq_query_inner_products(pq, x.data(), table.data()); });
  const double l2 = time_call([&] { quiver::pq_query_l2_table(pq, x.data(), table.data()); });
  const double list = time_call([&] { quiver::pq_list_table(pq, x.data(), table.data()); });
  const double batched =
      time_call([&] { quiver::pq_queries_inner_products(pq, pool, nq, x.data(), tables.data()); }) / nq;
  const double combine =
      time_call([&] { quiver::pq_combine_tables(m * kPqCentroids, other.data(), -2.0f, table.data(), table.data()); });
  std::printf("dim = %lld, m = %2lld: inner products %6.2f us/query (batched %5.2f), l2 table %6.2f us, "
              "list table %6.2f us, combine %5.2f us\n",
              static_cast<long long>(dim), static_cast<long long>(m), ip * 1e6, batched * 1e6, l2 * 1e6,
              list * 1e6, combine * 1e6);
}

void bench_encode(int64_t dim, int64_t m, bool avx512, bool avx2) {
  const int64_t dsub = dim / m, n = 2000;
  std::mt19937 gen(static_cast<uint32_t>(dim * 7 + m));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> codebook_t(m * dsub * kPqCentroids), x(n * dim);
  for (auto& v : codebook_t) v = value(gen);
  for (auto& v : x) v = value(gen);
  std::vector<uint8_t> codes(n * m);
  auto time_assign = [&](quiver::PqAssignFn fn) {
    return time_call([&] {
             for (int64_t s = 0; s < m; ++s)
               fn(x.data() + s * dsub, dim, n, dsub, &codebook_t[s * dsub * kPqCentroids], codes.data() + s, m);
           }) / n;
  };
  std::printf("encode dim = %lld, m = %2lld:  portable %6.2f us/vector", static_cast<long long>(dim),
              static_cast<long long>(m), time_assign(quiver::pq_assign_portable) * 1e6);
  if (avx2) std::printf("  avx2 %6.2f us/vector", time_assign(quiver::pq_assign_avx2) * 1e6);
  if (avx512) std::printf("  avx512 %6.2f us/vector", time_assign(quiver::pq_assign_avx512) * 1e6);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("machine: %s; load average before: %s\n", cpu_model().c_str(), load_average().c_str());
  std::printf("command:");
  for (int i = 0; i < argc; ++i) std::printf(" %s", argv[i]);
  std::printf("\nbaseline: pq_scan_portable, one thread; x = speed-up over it\n");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  std::vector<Kernel> kernels{{"naive", naive_scan}, {"portable", quiver::pq_scan_portable}};
  if (avx2) {
    kernels.push_back({"avx2", quiver::pq_scan_avx2});
  }
  if (avx512) {
    kernels.push_back({"avx512", quiver::pq_scan_avx512});
  }

  std::vector<int64_t> ms;
  for (int i = 1; i < argc; ++i) ms.push_back(std::atoll(argv[i]));
  if (ms.empty()) ms = {16, 32, 56, 64};
  for (int64_t n : {1000, 100000})
    for (int64_t m : ms) bench_scan(m, n, kernels);
  for (int64_t m : {16, 32, 64}) bench_tables(128, m);
  for (int64_t m : {8, 16, 32, 64}) bench_encode(128, m, avx512, avx2);
  std::printf("load average after: %s\n", load_average().c_str());
  return 0;
}
