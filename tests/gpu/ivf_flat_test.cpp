// gpu_ivf.h's IVF-Flat against a float64 reference of the same IVF semantics (ivf_testing.h):
// L2 and inner product, with and without rotation, dimensions that are not multiples of 32,
// nprobe = 1 .. nlist, k = 1 .. 2048 (lists smaller than k), few queries over long lists (chunked
// selection), empty lists and duplicates.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "cpp/backend/gpu_ivf.h"
#include "gpu_testing.h"
#include "ivf_testing.h"

namespace quiver {
namespace {

using testing::HostIvfModel;

struct FlatCase {
  int64_t n, dim, nlist, nq, k, nprobe;
  Metric metric;
  bool rotated;
};

std::vector<int64_t> spread_ids(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[i] = 3 * i + 7;
  return ids;
}

// Every vector went to its nearest centroid (up to a near-tie).
void check_assignment(const HostIvfModel& m, const std::vector<float>& data, const std::vector<int64_t>& lists) {
  const bool l2 = m.metric == Metric::l2;
  const int64_t n = int64_t(data.size()) / m.dim;
  std::vector<double> cd(static_cast<size_t>(m.dim));
  for (int64_t i = 0; i < n; ++i) {
    const auto xr = testing::rotate(m, &data[i * m.dim]);
    double best = 1e300, chosen = 0;
    for (int64_t l = 0; l < m.nlist; ++l) {
      for (int64_t c = 0; c < m.dim; ++c) cd[c] = m.centroids[l * m.dim + c];
      const double key = testing::key_of(l2, xr.data(), cd.data(), m.dim);
      best = std::min(best, key);
      if (l == lists[i]) chosen = key;
    }
    ASSERT_LE(chosen, best + 1e-4 * (1 + std::abs(best))) << "vector " << i << " list " << lists[i];
  }
}

TEST(GpuIvfFlat, MatchesReference) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const FlatCase cases[] = {
      {1000, 37, 13, 50, 7, 4, Metric::l2, false},     {1000, 37, 13, 50, 1, 1, Metric::l2, false},
      {1000, 37, 13, 50, 100, 13, Metric::l2, false},  {700, 45, 10, 30, 10, 3, Metric::inner_product, false},
      {600, 33, 8, 20, 10, 2, Metric::l2, true},       {300, 16, 5, 10, 2048, 5, Metric::l2, false},
      {2000, 128, 3, 3, 10, 2, Metric::l2, false},     {5000, 20, 40, 200, 33, 7, Metric::inner_product, true},
      {3000, 8, 6, 5, 2048, 6, Metric::l2, false},     {900, 70, 12, 40, 129, 5, Metric::l2, false},
  };
  uint32_t seed = 100;
  for (const FlatCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << "n " << c.n << " dim " << c.dim << " nlist " << c.nlist << " k " << c.k
                                      << " nprobe " << c.nprobe << " metric " << int(c.metric) << " rotated "
                                      << c.rotated);
    const auto data = testing::uniform_vectors(c.n, c.dim, seed);
    const auto queries = testing::uniform_vectors(c.nq, c.dim, seed + 1);
    const HostIvfModel model = testing::make_model(data, c.dim, c.nlist, 0, c.metric, c.rotated, seed);
    seed += 10;
    auto ivf = gpu::make_ivf(resources, model.view());
    const auto ids = spread_ids(c.n);
    std::vector<int64_t> lists(static_cast<size_t>(c.n));
    gpu::ivf_add(resources, *ivf, c.n, data.data(), ids.data(), lists.data());
    EXPECT_EQ(gpu::ivf_count(*ivf), c.n);
    check_assignment(model, data, lists);
    gpu::IvfSearchOptions options;
    options.nprobe = c.nprobe;
    const double tol = 2e-5 * double(c.dim) + 1e-4;
    const int64_t checked = testing::search_and_check(resources, *ivf, model, queries, c.k, options, tol);
    EXPECT_GE(checked, c.nq * 3 / 4);
  }
}

TEST(GpuIvfFlat, EmptyListsAndDuplicates) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const int64_t dim = 19, distinct = 150, nq = 20;
  auto base = testing::integer_vectors(distinct, dim, 5, 3);
  std::vector<float> data;
  for (int rep = 0; rep < 3; ++rep) data.insert(data.end(), base.begin(), base.end());  // every vector 3 times
  const int64_t n = int64_t(data.size()) / dim;
  HostIvfModel model = testing::make_model(data, dim, 6, 0, Metric::l2, false, 9);
  for (int l = 0; l < 4; ++l)  // four lists far from everything stay empty
    for (int64_t c = 0; c < dim; ++c) model.centroids.push_back(1000.f + float(l));
  model.nlist = 10;
  auto ivf = gpu::make_ivf(resources, model.view());
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[i] = n - i;
  gpu::ivf_add(resources, *ivf, n, data.data(), ids.data(), nullptr);
  for (int64_t l = 6; l < 10; ++l) EXPECT_EQ(gpu::ivf_list_size(*ivf, l), 0);
  const auto queries = testing::integer_vectors(nq, dim, 6, 3);
  for (int64_t nprobe : {1, 5, 10}) {
    for (int64_t k : {1, 7, 100}) {
      gpu::IvfSearchOptions options;
      options.nprobe = nprobe;
      testing::search_and_check(resources, *ivf, model, queries, k, options, 1e-3);
    }
  }
}

}  // namespace
}  // namespace quiver
