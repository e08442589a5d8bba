// The exact search's centring decision (cuda/flat/centring.h): the sample's sums on the device equal
// the host's, and the centre is chosen where it shrinks the certificate's bound: data far from the
// origin, unless its values are exact in TF32 (small integers, as pixels are), whose uncentred
// products are exact and whose bound then only grows with centring, short of an offset that holds
// nearly all of the rows' squared norms.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cuda/flat/centring.h"
#include "cuda/flat/knn_passes.h"
#include "exact_float.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver {
namespace {

using testing::DeviceArray;

// Rows of dim values around `offset` (column c's mean offset + c % 7), spread `spread`, rounded to
// integers when asked.
std::vector<float> rows_around(int64_t n, int64_t dim, float offset, float spread, bool integers, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  std::vector<float> x(size_t(n * dim));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < dim; ++c) {
      const float v = offset + float(c % 7) + spread * unit(gen);
      x[size_t(r * dim + c)] = integers ? std::round(v) : v;
    }
  return x;
}

bool centres(const std::vector<float>& x, int64_t n, int64_t dim) {
  const int64_t samples = std::min<int64_t>(n, gpu::kCentreSampleRows);
  return !gpu::choose_centre(gpu::sample_sums_host(x.data(), n, dim, samples), dim, samples).empty();
}

TEST(GpuCentring, ChoosesTheCentreByTheBound) {
  const int64_t n = 5000, dim = 96;
  // Pixel-like: integers 0 .. 255, the mean about half of the rows' norms: exact, so left alone.
  EXPECT_FALSE(centres(rows_around(n, dim, 120.f, 120.f, true, 1), n, dim));
  // The same values off the integers: rounded by TF32 either way, so centred.
  EXPECT_TRUE(centres(rows_around(n, dim, 120.f, 120.f, false, 2), n, dim));
  // Integers exact in TF32 but far from the origin (1 000 +- 20): the offset holds nearly all of the
  // norms, and centring pays even with its rounding.
  EXPECT_TRUE(centres(rows_around(n, dim, 1000.f, 20.f, true, 3), n, dim));
  // Near the origin (column means 0 .. 6, spread 100): never.
  EXPECT_FALSE(centres(rows_around(n, dim, 0.f, 100.f, false, 4), n, dim));
  EXPECT_FALSE(centres(rows_around(n, dim, 0.f, 100.f, true, 5), n, dim));
}

TEST(GpuCentring, DeviceSumsEqualTheHosts) {
  QV_REQUIRE_GPU();
  testing::TestDeviceScope scope;
  for (bool integers : {true, false}) {
    const int64_t n = 9001, dim = 37, samples = gpu::kCentreSampleRows;
    const std::vector<float> x = rows_around(n, dim, 50.f, 60.f, integers, 6);
    DeviceArray<float> d_x(x);
    DeviceArray<double> workspace{size_t(gpu::sample_sums_workspace(dim))};
    const std::vector<double> device = gpu::sample_sums_device(d_x.get(), n, dim, samples, workspace.get(), nullptr);
    const std::vector<double> host = gpu::sample_sums_host(x.data(), n, dim, samples);
    ASSERT_EQ(device.size(), host.size());
    for (size_t i = 0; i < host.size(); ++i) EXPECT_NEAR(device[i], host[i], 1e-9 * std::fabs(host[i])) << i;
    // The residuals: none for integers.
    for (int64_t c = 0; c < dim; ++c) EXPECT_EQ(device[size_t(3 * c + 2)] == 0, integers) << "column " << c;
  }
}

// Pixel-like rows (integers 0 .. 255), searched uncentred: exact results, the TF32 pass certifying
// nearly every query.
TEST(GpuCentring, PixelLikeRowsSearchedUncentred) {
  QV_REQUIRE_GPU();
  const int64_t n = testing::sized(20011, 12011), dim = 96, nq = 300, k = 10;
  testing::KnnProblem p{n, dim, nq, Metric::l2, rows_around(n, dim, 120.f, 120.f, true, 7),
                        rows_around(nq, dim, 120.f, 120.f, true, 8)};
  std::vector<float> dist(size_t(nq * k));
  std::vector<int64_t> ids(size_t(nq * k));
  gpu::knn(testing::shared_resources(), p.metric, p.base.data(), nullptr, n, dim, p.queries.data(), nq, k,
           dist.data(), ids.data());
  const gpu::KnnPassCounts counts = gpu::last_knn_pass_counts();
  EXPECT_GE(double(counts.tf32), 0.9 * double(nq)) << "sgemm " << counts.sgemm << " direct " << counts.direct;
  std::vector<float> want_d;
  std::vector<int64_t> want_i;
  testing::exact_knn_reference(p, k, nullptr, want_d, want_i);
  EXPECT_EQ(ids, want_i);
  EXPECT_EQ(dist, want_d);
}

}  // namespace
}  // namespace quiver
