// cuda/metric/squared_hits.*: the squared L2 distance of every range-search hit, computed on the
// device as the host's squared_l2 computes it, the hits sorted by it. Every hit's float must be the
// host's, bit for bit, at dimensions that take the host's scalar path (below 32) and its AVX2 path,
// with and without the components past the last multiple of eight; and a metric index on a CUDA
// context must then answer
// L2 range searches exactly as one on the CPU (ids, squared distances, order).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "cpp/backend/gpu_metric.h"
#include "cpp/core/context.h"
#include "cpp/distance/vectors.h"
#include "cpp/index/factory.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver::testing {
namespace {

constexpr int64_t kDims[] = {1, 7, 8, 9, 31, 32, 33, 128, 130};

// Components of mixed magnitudes, so that sums in another order round differently.
std::vector<float> mixed_vectors(int64_t n, int64_t dim, uint32_t seed) {
  std::vector<float> x = uniform_vectors(n, dim, seed);
  const std::vector<float> scale = uniform_vectors(n, dim, seed + 1);
  for (size_t i = 0; i < x.size(); ++i) x[i] *= std::ldexp(1.0f, int(scale[i] * 6.0f));
  return x;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(GpuSquaredHits, EveryHitIsTheHostsSquaredL2) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  const int64_t n = sized(300, 90), nq = sized(20, 6);
  for (int64_t dim : kDims) {
    const std::vector<float> x = mixed_vectors(n, dim, uint32_t(dim));
    const std::vector<float> q = mixed_vectors(nq, dim, uint32_t(dim + 100));
    gpu::MetricDevicePtr device = gpu::make_metric_device(resources, Metric::l2, dim);
    gpu::metric_upload(resources, *device, Objects::of_vectors(n, dim, x.data()), nullptr, nullptr);
    const Objects queries = Objects::of_vectors(nq, dim, q.data());
    const gpu::MetricHits hits = gpu::metric_range_search(resources, *device, gpu::MetricMethod::brute_force, queries,
                                                          std::numeric_limits<float>::infinity(), gpu::RowFilter{}, 0);
    ASSERT_EQ(hits.lims.back(), n * nq) << "dim " << dim;
    ASSERT_EQ(hits.distances.size(), hits.rows.size()) << "dim " << dim;
    int64_t differ = 0, unordered = 0;
    for (int64_t query = 0; query < nq; ++query)
      for (int64_t i = hits.lims[query]; i < hits.lims[query + 1]; ++i) {
        const float host = squared_l2(&q[size_t(query * dim)], &x[size_t(hits.rows[i] * dim)], dim);
        if (!same_bits(hits.distances[i], host)) ++differ;
        if (i > hits.lims[query] && !(hits.distances[i - 1] < hits.distances[i] ||
                                      (hits.distances[i - 1] == hits.distances[i] && hits.rows[i - 1] < hits.rows[i])))
          ++unordered;
      }
    EXPECT_EQ(differ, 0) << "dim " << dim << ": hits whose squared distance is not the host's";
    EXPECT_EQ(unordered, 0) << "dim " << dim << ": hits out of (squared distance, row) order";
  }
}

// SSS and List of Clusters on a CUDA context answer L2 range searches in the host's squared
// distances, sorted by them, as on the CPU: every hit's float is squared_l2's, and the rows found
// are the CPU's but for rows whose distance is within rounding of the radius (the device's true
// distance, not the host's, decides those).
TEST(GpuSquaredHits, GpuIndexesAnswerAsTheCpu) {
  QV_REQUIRE_GPU();
  Context cuda{ContextOptions{DeviceKind::cuda, test_device(), 2}};
  Context cpu{ContextOptions{DeviceKind::cpu, 0, 2}};
  const int64_t n = sized(700, 200), nq = sized(40, 20);
  constexpr double kRounding = 1e-4;  // relative, far above the float rounding of 130 components
  for (const char* descriptor : {"SSS0.5", "LC16"}) {
    for (int64_t dim : {int64_t(5), int64_t(33), int64_t(128)}) {
      const std::vector<float> x = mixed_vectors(n, dim, uint32_t(dim * 3));
      std::vector<float> q = mixed_vectors(nq, dim, uint32_t(dim * 3 + 1));
      std::copy(x.begin(), x.begin() + 2 * dim, q.begin());  // two queries that are rows
      auto on_gpu = create_index(cuda, descriptor, dim, Metric::l2);
      auto on_cpu = create_index(cpu, descriptor, dim, Metric::l2);
      on_gpu->add(n, x.data(), nullptr);
      on_cpu->add(n, x.data(), nullptr);
      std::vector<float> typical;
      for (int64_t r = 0; r < n; ++r)
        typical.push_back(squared_l2(&q[size_t(5 * dim)], &x[size_t(r * dim)], dim));
      std::sort(typical.begin(), typical.end());
      for (float radius : {0.0f, typical[size_t(n / 50)], typical[size_t(n / 3)]}) {
        const std::string what = std::string(descriptor) + " dim " + std::to_string(dim) + " radius " +
                                 std::to_string(radius);
        const RangeResult a = on_gpu->range_search(nq, q.data(), radius, SearchOptions{});
        const RangeResult b = on_cpu->range_search(nq, q.data(), radius, SearchOptions{});
        ASSERT_EQ(a.lims.size(), b.lims.size()) << what;
        for (int64_t query = 0; query < nq; ++query) {
          std::vector<int64_t> found;
          for (int64_t i = a.lims[query]; i < a.lims[query + 1]; ++i) {
            const float host = squared_l2(&q[size_t(query * dim)], &x[size_t(a.ids[i] * dim)], dim);
            EXPECT_TRUE(same_bits(a.distances[i], host)) << what << " query " << query << " id " << a.ids[i];
            EXPECT_LE(a.distances[i], radius) << what;
            if (i > a.lims[query])
              EXPECT_TRUE(a.distances[i - 1] < a.distances[i] ||
                          (a.distances[i - 1] == a.distances[i] && a.ids[i - 1] < a.ids[i]))
                  << what << " query " << query << " out of order at " << i;
            found.push_back(a.ids[i]);
          }
          std::vector<int64_t> expected(b.ids.begin() + b.lims[query], b.ids.begin() + b.lims[query + 1]);
          std::sort(found.begin(), found.end());
          std::sort(expected.begin(), expected.end());
          std::vector<int64_t> differ;
          std::set_symmetric_difference(found.begin(), found.end(), expected.begin(), expected.end(),
                                        std::back_inserter(differ));
          for (int64_t id : differ) {
            const double d = squared_l2(&q[size_t(query * dim)], &x[size_t(id * dim)], dim);
            EXPECT_LE(std::fabs(d - radius), kRounding * radius) << what << " query " << query << " id " << id;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace quiver::testing
