// Every SIMD scan kernel the processor runs hands the sink exactly what the portable one does.
#include <gtest/gtest.h>

#include <vector>

#include "cpp/select/scan.h"
#include "reference.h"

namespace quiver {
namespace {

struct Recorder {
  ScanSink sink;  // first member
  std::vector<std::pair<float, int64_t>> seen;
  bool shrink;  // lower the threshold to each accepted key, as k-selection does
  static void accept(ScanSink* s, float key, int64_t index) {
    auto* self = reinterpret_cast<Recorder*>(s);
    self->seen.push_back({key, index});
    if (self->shrink) s->threshold = key;
  }
};

std::vector<std::pair<float, int64_t>> run(ScanFn fn, const std::vector<float>& row,
                                           const std::vector<float>* bias, float threshold, bool shrink) {
  Recorder r{{threshold, &Recorder::accept}, {}, shrink};
  fn(row.data(), bias ? bias->data() : nullptr, static_cast<int64_t>(row.size()), 100, &r.sink);
  return r.seen;
}

TEST(Scan, KernelsAgreeWithPortable) {
  std::vector<ScanFn> kernels;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) kernels.push_back(scan_avx2);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    kernels.push_back(scan_avx512);
  if (kernels.empty()) GTEST_SKIP() << "no SIMD kernel runs on this processor";
  for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 31, 33, 100, 1000}) {
    auto row = testing::random_vectors(1, n, static_cast<uint32_t>(n));
    auto bias = testing::random_vectors(1, n, static_cast<uint32_t>(n + 99));
    for (bool shrink : {false, true})
      for (const std::vector<float>* b : std::vector<const std::vector<float>*>{nullptr, &bias}) {
        const auto expected = run(scan_portable, row, b, 0.1f, shrink);
        for (ScanFn fn : kernels) EXPECT_EQ(run(fn, row, b, 0.1f, shrink), expected) << "n=" << n;
      }
  }
}

}  // namespace
}  // namespace quiver
