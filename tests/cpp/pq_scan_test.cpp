// Every PQ scan kernel the processor runs hands the sink exactly (bit for bit) what a plain
// left-to-right reference sum does, for awkward code lengths and counts, with fixed and with
// shrinking thresholds (k-selection).
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "cpp/quantize/pq_scan.h"
#include "cpp/quantize/product_quantizer.h"
#include "reference.h"

namespace quiver {
namespace {

struct Recorder {
  ScanSink sink;  // first member
  std::vector<std::pair<float, int64_t>> seen;
  int shrink_every;  // 0: fixed threshold; else lower it to the key on every shrink_every-th accept
  static void accept(ScanSink* s, float key, int64_t index) {
    auto* self = reinterpret_cast<Recorder*>(s);
    self->seen.push_back({key, index});
    if (self->shrink_every && self->seen.size() % self->shrink_every == 0) s->threshold = key;
  }
};

std::vector<std::pair<float, int64_t>> run(PqScanFn fn, const std::vector<uint8_t>& codes, int64_t n, int64_t m,
                                           const std::vector<float>& table, float bias, float threshold,
                                           int shrink_every) {
  Recorder r{{threshold, &Recorder::accept}, {}, shrink_every};
  fn(codes.data(), n, m, table.data(), bias, 1000, &r.sink);
  return r.seen;
}

void reference_scan(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias,
                    int64_t first_index, ScanSink* sink) {
  for (int64_t j = 0; j < n; ++j) {
    float key = bias;
    for (int64_t s = 0; s < m; ++s) key += table[s * kPqCentroids + codes[j * m + s]];
    if (key < sink->threshold) sink->accept(sink, key, first_index + j);
  }
}

std::vector<std::pair<std::string, PqScanFn>> kernels() {
  std::vector<std::pair<std::string, PqScanFn>> all{{"portable", pq_scan_portable}, {"best", best_pq_scan()}};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    all.push_back({"avx2", pq_scan_avx2});
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    all.push_back({"avx512", pq_scan_avx512});
  }
  return all;
}

TEST(PqScan, KernelsAgreeBitForBitWithReference) {
  const auto all = kernels();
  if (all.size() == 2) std::cout << "no SIMD PQ scan kernel runs on this processor: portable only\n";
  std::mt19937 gen(5);
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 31, 32, 56, 64, 96}) {
    // Tables with large and small entries of both signs, so that the summation order matters.
    std::vector<float> table = testing::random_vectors(m, kPqCentroids, static_cast<uint32_t>(m), 3.0f);
    for (int64_t i = 0; i < m * kPqCentroids; i += 7) table[i] *= 1000.0f;
    for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 257}) {
      // Exactly n * m bytes, so that a kernel reading past the codes trips the sanitizers.
      std::vector<uint8_t> codes(n * m);
      for (auto& c : codes) c = static_cast<uint8_t>(gen());
      for (float bias : {0.0f, -2.5f}) {
        // Thresholds: everything passes; about half; shrinking like k-selection.
        for (auto [threshold, shrink] : {std::pair<float, int>{1e30f, 0}, {bias, 0}, {1e30f, 1}, {bias + 5, 3}}) {
          Recorder r{{threshold, &Recorder::accept}, {}, shrink};
          reference_scan(codes.data(), n, m, table.data(), bias, 1000, &r.sink);
          for (const auto& [name, fn] : all)
            EXPECT_EQ(run(fn, codes, n, m, table, bias, threshold, shrink), r.seen)
                << name << " m=" << m << " n=" << n << " threshold=" << threshold << " shrink=" << shrink;
        }
      }
    }
  }
}

TEST(PqScan, CodesWithEveryByteValue) {
  // Bytes 0 and 255 at every position of the gathered words (the byte extraction must not sign-extend
  // or spill into the next sub-space's table).
  const int64_t m = 13, n = 512;
  std::vector<float> table(m * kPqCentroids);
  for (int64_t i = 0; i < m * kPqCentroids; ++i) table[i] = static_cast<float>(i % 1009) * 0.25f;
  std::vector<uint8_t> codes(n * m);
  for (int64_t i = 0; i < n * m; ++i) codes[i] = static_cast<uint8_t>(i % 3 == 0 ? 255 : (i % 3 == 1 ? 0 : i));
  Recorder ref{{1e30f, &Recorder::accept}, {}, 0};
  reference_scan(codes.data(), n, m, table.data(), 1.0f, 0, &ref.sink);
  ASSERT_EQ(ref.seen.size(), static_cast<size_t>(n));
  for (const auto& [name, fn] : kernels()) EXPECT_EQ(run(fn, codes, n, m, table, 1.0f, 1e30f, 0).size(), size_t(n));
  for (const auto& [name, fn] : kernels()) {
    Recorder r{{1e30f, &Recorder::accept}, {}, 0};
    fn(codes.data(), n, m, table.data(), 1.0f, 0, &r.sink);
    EXPECT_EQ(r.seen, ref.seen) << name;
  }
}

}  // namespace
}  // namespace quiver
