// gpu::knn against a float64 brute force: every metric, k = 1 .. 2048, dimensions that are not
// multiples of 32, n < k, ties and duplicates, host / device / pinned pointers, the tiling (small
// tiles force many query and base tiles), a filter, and no device allocation once warm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "cpp/core/error.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver {
namespace {

using testing::DeviceArray;

struct Case {
  int64_t n, dim, nq, k;
  Metric metric;
};

struct Data {
  std::vector<float> base, queries;
};

Data make_data(const Case& c, uint32_t seed) {
  Data d{testing::uniform_vectors(c.n, c.dim, seed), testing::uniform_vectors(c.nq, c.dim, seed + 1)};
  if (c.metric == Metric::cosine) {
    testing::normalize(d.base, c.dim);
    testing::normalize(d.queries, c.dim);
  }
  return d;
}

// Per query, (distance, row) closest first (ties to the smaller row), rows the filter allows.
std::vector<std::pair<double, int64_t>> ranking(const Case& c, const Data& d, int64_t q,
                                                const std::vector<uint8_t>* filter) {
  const bool l2 = c.metric == Metric::l2;
  std::vector<std::pair<double, int64_t>> all;
  for (int64_t j = 0; j < c.n; ++j) {
    if (filter && !(j < int64_t(filter->size()) * 8 && (((*filter)[j >> 3] >> (j & 7)) & 1))) continue;
    const double v = testing::exact_value(l2, &d.queries[q * c.dim], &d.base[j * c.dim], c.dim);
    all.push_back({l2 ? v : -v, j});
  }
  std::sort(all.begin(), all.end());
  for (auto& p : all) p.first = l2 ? p.first : -p.first;
  return all;
}

// Distances within rounding of the reference at every rank; an id may differ from the reference's
// only where its own exact distance is within rounding of that rank's (a near-tie); ids distinct;
// order closest first; padding where fewer than k rows exist.
void check_results(const Case& c, const Data& d, const std::vector<float>& dist,
                   const std::vector<int64_t>& ids, const std::vector<uint8_t>* filter = nullptr) {
  const bool l2 = c.metric == Metric::l2;
  // Float sums lose about eps * dim of the distance; inputs are in [-1, 1].
  const double tolerance = 2e-6 * double(c.dim) + 1e-5;
  for (int64_t q = 0; q < c.nq; ++q) {
    const auto ref = ranking(c, d, q, filter);
    std::set<int64_t> seen;
    for (int64_t i = 0; i < c.k; ++i) {
      const float got = dist[q * c.k + i];
      const int64_t id = ids[q * c.k + i];
      if (i >= int64_t(ref.size())) {
        ASSERT_EQ(id, -1) << "query " << q << " rank " << i;
        ASSERT_EQ(got, missing_distance(c.metric)) << "query " << q << " rank " << i;
        continue;
      }
      ASSERT_NEAR(got, ref[i].first, tolerance) << "query " << q << " rank " << i;
      ASSERT_GE(id, 0) << "query " << q << " rank " << i;
      ASSERT_LT(id, c.n) << "query " << q << " rank " << i;
      ASSERT_TRUE(seen.insert(id).second) << "query " << q << " repeats id " << id;
      if (filter) ASSERT_TRUE(((*filter)[id >> 3] >> (id & 7)) & 1) << "filtered id " << id;
      if (id != ref[i].second) {
        const double own = testing::exact_value(l2, &d.queries[q * c.dim], &d.base[id * c.dim], c.dim);
        ASSERT_NEAR(own, ref[i].first, 2 * tolerance) << "query " << q << " rank " << i << " id " << id;
      }
      if (i > 0 && ids[q * c.k + i - 1] >= 0) {
        const float prev = dist[q * c.k + i - 1];
        if (l2) ASSERT_LE(prev, got) << "query " << q << " rank " << i;
        else ASSERT_GE(prev, got) << "query " << q << " rank " << i;
      }
    }
  }
}

void run_case(gpu::Resources& resources, const Case& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "n " << c.n << " dim " << c.dim << " nq " << c.nq << " k " << c.k
                                    << " " << metric_name(c.metric));
  const Data d = make_data(c, seed);
  std::vector<float> dist(size_t(c.nq * c.k), 12345.f);
  std::vector<int64_t> ids(size_t(c.nq * c.k), 12345);
  gpu::knn(resources, c.metric, d.base.data(), nullptr, c.n, c.dim, d.queries.data(), c.nq, c.k,
           dist.data(), ids.data());
  check_results(c, d, dist, ids);
}

TEST(GpuKnn, MatchesFloat64ReferenceForEveryK) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  uint32_t seed = 1;
  for (Metric m : {Metric::l2, Metric::inner_product, Metric::cosine}) {
    for (int64_t k : {1, 7, 32, 100, 1000, 2048}) {
      run_case(resources, {3000, 33, 20, k, m}, seed++);
    }
  }
  // Odd dimensions, n < k, one row, one query.
  run_case(resources, {5, 3, 7, 7, Metric::l2}, seed++);
  run_case(resources, {5, 3, 7, 2048, Metric::inner_product}, seed++);
  run_case(resources, {1, 1, 1, 1, Metric::l2}, seed++);
  run_case(resources, {1, 100, 3, 10, Metric::cosine}, seed++);
  run_case(resources, {2049, 129, 3, 2048, Metric::l2}, seed++);
  run_case(resources, {testing::sized(10000, 4000), 128, 100, 100, Metric::l2}, seed++);
  run_case(resources, {20000, 1, 10, 50, Metric::l2}, seed++);
}

// Small tiles: many query tiles and many base tiles, so the running result continues across base
// tiles and streams alternate.
TEST(GpuKnn, TilingDoesNotChangeResults) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions options = testing::test_resources_options();
  options.tile_bytes = testing::small_tile_bytes();
  auto resources = gpu::make_resources(options);
  uint32_t seed = 50;
  for (Metric m : {Metric::l2, Metric::inner_product}) {
    run_case(*resources, {20000, 8, 37, 10, m}, seed++);
    run_case(*resources, {30000, 5, 5, 100, m}, seed++);
    run_case(*resources, {9000, 17, 3, 1000, m}, seed++);
  }
}

// Integer vectors make every distance exact, so ties are exact: the order must be (distance, row).
TEST(GpuKnn, TiesAndDuplicatesGoToTheSmallerRow) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions small_tiles = testing::test_resources_options();
  small_tiles.tile_bytes = testing::small_tile_bytes();  // ties then meet across base tiles too
  auto small = gpu::make_resources(small_tiles);
  for (gpu::Resources* resources : {&testing::shared_resources(), small.get()}) {
    for (Metric m : {Metric::l2, Metric::inner_product}) {
      for (int64_t k : {1, 7, 100, 2048}) {
        const Case c{testing::sized(20000, 9000), 4, 30, k, m};
        Data d{testing::integer_vectors(c.n, c.dim, 7, 2), testing::integer_vectors(c.nq, c.dim, 8, 2)};
        // Duplicate rows far apart (across tiles).
        for (int64_t j = 0; j < 200; ++j) std::copy_n(&d.base[j * c.dim], c.dim, &d.base[(c.n - 1 - j) * c.dim]);
        std::vector<float> dist(size_t(c.nq * c.k));
        std::vector<int64_t> ids(size_t(c.nq * c.k));
        gpu::knn(*resources, m, d.base.data(), nullptr, c.n, c.dim, d.queries.data(), c.nq, c.k, dist.data(),
                 ids.data());
        for (int64_t q = 0; q < c.nq; ++q) {
          const auto ref = ranking(c, d, q, nullptr);
          for (int64_t i = 0; i < c.k; ++i) {
            ASSERT_EQ(ids[q * c.k + i], ref[i].second)
                << metric_name(m) << " k " << k << " query " << q << " rank " << i;
            ASSERT_EQ(dist[q * c.k + i], float(ref[i].first)) << metric_name(m) << " query " << q << " rank " << i;
          }
        }
      }
    }
  }
}

TEST(GpuKnn, AcceptsHostDeviceAndPinnedPointers) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const Case c{4000, 50, 64, 32, Metric::l2};
  const Data d = make_data(c, 77);
  std::vector<float> norms(c.n);
  for (int64_t j = 0; j < c.n; ++j) norms[j] = float(testing::exact_value(false, &d.base[j * c.dim], &d.base[j * c.dim], c.dim));
  DeviceArray<float> base(d.base), queries(d.queries), base_norms(norms);
  DeviceArray<float> dist(size_t(c.nq * c.k));
  DeviceArray<int64_t> ids(size_t(c.nq * c.k));

  // Everything on the device.
  gpu::knn(resources, c.metric, base.get(), base_norms.get(), c.n, c.dim, queries.get(), c.nq, c.k, dist.get(), ids.get());
  check_results(c, d, dist.to_host(), ids.to_host());
  // Host queries, device outputs, host norms.
  gpu::knn(resources, c.metric, base.get(), norms.data(), c.n, c.dim, d.queries.data(), c.nq, c.k, dist.get(), ids.get());
  check_results(c, d, dist.to_host(), ids.to_host());
  // Device queries, pinned host outputs, host base.
  float* pinned_d = nullptr;
  int64_t* pinned_i = nullptr;
  QV_ASSERT_CUDA(cudaMallocHost(&pinned_d, sizeof(float) * c.nq * c.k));
  QV_ASSERT_CUDA(cudaMallocHost(&pinned_i, sizeof(int64_t) * c.nq * c.k));
  gpu::knn(resources, c.metric, d.base.data(), nullptr, c.n, c.dim, queries.get(), c.nq, c.k, pinned_d, pinned_i);
  check_results(c, d, std::vector<float>(pinned_d, pinned_d + c.nq * c.k),
               std::vector<int64_t>(pinned_i, pinned_i + c.nq * c.k));
  cudaFreeHost(pinned_d);
  cudaFreeHost(pinned_i);
}

TEST(GpuKnn, SearchesADeviceMatrix) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const Case c{3000, 24, 10, 16, Metric::l2};
  const Data d = make_data(c, 91);
  auto matrix = gpu::make_matrix(resources, c.dim);
  gpu::matrix_append(resources, *matrix, 1000, d.base.data());
  gpu::matrix_append(resources, *matrix, c.n - 1000, d.base.data() + 1000 * c.dim);
  std::vector<float> dist(size_t(c.nq * c.k));
  std::vector<int64_t> ids(size_t(c.nq * c.k));
  gpu::knn(resources, c.metric, gpu::matrix_data(*matrix), gpu::matrix_norms(*matrix), gpu::matrix_rows(*matrix),
           c.dim, d.queries.data(), c.nq, c.k, dist.data(), ids.data());
  check_results(c, d, dist, ids);
}

TEST(GpuKnn, AppliesTheRowFilter) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  std::mt19937 gen(3);
  for (int64_t k : {5, 100, 1000}) {
    const Case c{6000, 20, 15, k, Metric::inner_product};
    const Data d = make_data(c, 31);
    // Sparse: about one row in 16 allowed, so k = 1000 exceeds the allowed rows for some queries...
    // and bits stop before n, so the last rows are excluded.
    std::vector<uint8_t> bits(size_t(c.n / 8 - 10));
    for (auto& b : bits) b = uint8_t((gen() % 2 == 0 ? 1u : 0u) << (gen() % 8));
    gpu::RowFilter filter{bits.data(), int64_t(bits.size()) * 8};
    std::vector<float> dist(size_t(c.nq * c.k));
    std::vector<int64_t> ids(size_t(c.nq * c.k));
    gpu::knn(resources, c.metric, d.base.data(), nullptr, c.n, c.dim, d.queries.data(), c.nq, c.k,
             dist.data(), ids.data(), filter);
    check_results(c, d, dist, ids, &bits);
  }
}

TEST(GpuKnn, EmptyInputsAndBadArguments) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const auto q = testing::uniform_vectors(3, 4, 1);
  std::vector<float> dist(6, 0.f);
  std::vector<int64_t> ids(6, 0);
  gpu::knn(resources, Metric::l2, nullptr, nullptr, 0, 4, q.data(), 3, 2, dist.data(), ids.data());
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(ids[i], -1);
    EXPECT_EQ(dist[i], missing_distance(Metric::l2));
  }
  DeviceArray<float> dd(6);
  DeviceArray<int64_t> di(6);
  gpu::knn(resources, Metric::inner_product, nullptr, nullptr, 0, 4, q.data(), 3, 2, dd.get(), di.get());
  for (float v : dd.to_host()) EXPECT_EQ(v, missing_distance(Metric::inner_product));
  for (int64_t v : di.to_host()) EXPECT_EQ(v, -1);
  gpu::knn(resources, Metric::l2, q.data(), nullptr, 3, 4, nullptr, 0, 2, nullptr, nullptr);  // nq = 0

  auto status = [&](int64_t k, int64_t dim) {
    try {
      gpu::knn(resources, Metric::l2, q.data(), nullptr, 3, dim, q.data(), 3, k, dist.data(), ids.data());
    } catch (const Error& e) {
      return e.status();
    }
    return Status::ok;
  };
  EXPECT_EQ(status(0, 4), Status::invalid_argument);
  EXPECT_EQ(status(2049, 4), Status::invalid_argument);
  EXPECT_EQ(status(2, 0), Status::invalid_argument);
  EXPECT_EQ(status(2, 4), Status::ok);
}

// The pool serves a repeated search: no cudaMalloc after the first call.
TEST(GpuKnn, NoDeviceAllocationOnceWarm) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  // Under the sanitizer 40 queries (still 32 or more: the TF32 pass) and one repeat.
  const Case c{testing::sized(20000, 5000), 64, testing::sized(500, 40), 100, Metric::l2};
  const Data d = make_data(c, 5);
  std::vector<float> dist(size_t(c.nq * c.k));
  std::vector<int64_t> ids(size_t(c.nq * c.k));
  gpu::knn(resources, c.metric, d.base.data(), nullptr, c.n, c.dim, d.queries.data(), c.nq, c.k, dist.data(), ids.data());
  const int64_t before = gpu::memory_stats(resources).device_allocations;
  for (int i = 0; i < testing::sized(3, 1); ++i)
    gpu::knn(resources, c.metric, d.base.data(), nullptr, c.n, c.dim, d.queries.data(), c.nq, c.k, dist.data(), ids.data());
  EXPECT_EQ(gpu::memory_stats(resources).device_allocations, before);
  EXPECT_EQ(gpu::memory_stats(resources).in_use_bytes, 0);
}

// Asking for more device memory than exists reports out_of_device_memory, leaves the matrix as it
// was and the device usable.
TEST(GpuKnn, OutOfDeviceMemoryIsReported) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const Case c{1000, 8, 10, 10, Metric::l2};
  const Data d = make_data(c, 9);
  auto matrix = gpu::make_matrix(resources, c.dim);
  gpu::matrix_append(resources, *matrix, c.n, d.base.data());
  DeviceArray<float> small(16);
  Status status = Status::ok;
  try {
    // 2^40 rows of 8 floats (32 TiB): the new storage cannot be allocated, so x is never read.
    gpu::matrix_append(resources, *matrix, int64_t(1) << 40, small.get());
  } catch (const Error& e) {
    status = e.status();
  }
  EXPECT_EQ(status, Status::out_of_device_memory);
  ASSERT_EQ(gpu::matrix_rows(*matrix), c.n);
  std::vector<float> dist(size_t(c.nq * c.k));
  std::vector<int64_t> ids(size_t(c.nq * c.k));
  gpu::knn(resources, c.metric, gpu::matrix_data(*matrix), gpu::matrix_norms(*matrix), c.n, c.dim,
           d.queries.data(), c.nq, c.k, dist.data(), ids.data());
  check_results(c, d, dist, ids);
}

}  // namespace
}  // namespace quiver
