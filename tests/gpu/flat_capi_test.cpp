// "Flat", qv_knn and qv_kmeans on a CUDA context, through the C API: the same answers as on a CPU
// context, for host and device pointers, custom ids, filters, removal, and saves that move an index
// between devices.
#include <cmath>
#include <cstdio>
#include <string>

#include "gpu_testing.h"
#include "quiver/quiver.h"

namespace quiver::testing {
namespace {

struct Contexts {
  qv_context_t* cpu = nullptr;
  qv_context_t* cuda = nullptr;
  Contexts() {
    qv_context_options_t o;
    qv_context_options_init(&o);
    o.device = QV_DEVICE_CPU;
    o.cpu_threads = 4;
    qv_context_create(&o, &cpu);
    o.device = QV_DEVICE_CUDA;
    o.device_id = test_device();
    qv_context_create(&o, &cuda);
  }
  ~Contexts() {
    qv_context_free(cpu);
    qv_context_free(cuda);
  }
};

struct Result {
  std::vector<float> distances;
  std::vector<int64_t> ids;
};

Result search(const qv_index_t* index, const std::vector<float>& queries, int64_t dim, uint32_t k,
              const qv_search_params_t* params = nullptr) {
  const int64_t nq = static_cast<int64_t>(queries.size()) / dim;
  Result r{std::vector<float>(nq * k), std::vector<int64_t>(nq * k)};
  EXPECT_EQ(qv_index_search(index, nq, queries.data(), k, params, r.distances.data(), r.ids.data()), QV_OK)
      << qv_last_error_message();
  return r;
}

void expect_same(const Result& gpu, const Result& cpu, float tolerance) {
  ASSERT_EQ(gpu.ids.size(), cpu.ids.size());
  size_t differing = 0;
  for (size_t i = 0; i < gpu.ids.size(); ++i) {
    EXPECT_NEAR(gpu.distances[i], cpu.distances[i], tolerance) << i;
    differing += gpu.ids[i] != cpu.ids[i];
  }
  // Near-ties may order differently between the devices' roundings.
  EXPECT_LE(differing, gpu.ids.size() / 100) << "ids differ in " << differing << " places";
}

qv_index_t* make_index(qv_context_t* ctx, int64_t dim, qv_metric_t metric, const std::vector<float>& x,
                       const int64_t* ids) {
  qv_index_t* index = nullptr;
  EXPECT_EQ(qv_index_create(ctx, "Flat", dim, metric, &index), QV_OK) << qv_last_error_message();
  EXPECT_EQ(qv_index_add(index, static_cast<int64_t>(x.size()) / dim, x.data(), ids), QV_OK)
      << qv_last_error_message();
  return index;
}

TEST(GpuFlatCapi, SearchMatchesCpuForEveryMetric) {
  QV_REQUIRE_GPU();
  Contexts c;
  const int64_t n = 3001, dim = 45, nq = 77;
  const auto x = uniform_vectors(n, dim, 1);
  const auto q = uniform_vectors(nq, dim, 2);
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    for (uint32_t k : {1u, 10u, 100u, 2048u}) {
      qv_index_t* on_gpu = make_index(c.cuda, dim, metric, x, nullptr);
      qv_index_t* on_cpu = make_index(c.cpu, dim, metric, x, nullptr);
      expect_same(search(on_gpu, q, dim, k), search(on_cpu, q, dim, k), 1e-3f);
      qv_index_info_t info;
      qv_index_info_init(&info);
      ASSERT_EQ(qv_index_info(on_gpu, &info), QV_OK);
      EXPECT_EQ(info.device, QV_DEVICE_CUDA);
      EXPECT_GT(info.device_bytes, 0);
      qv_index_free(on_gpu);
      qv_index_free(on_cpu);
    }
  }
}

TEST(GpuFlatCapi, CustomIdsFilterRemoveAndDevicePointers) {
  QV_REQUIRE_GPU();
  Contexts c;
  const int64_t n = 1500, dim = 16, nq = 20;
  const uint32_t k = 12;
  const auto x = uniform_vectors(n, dim, 3);
  const auto q = uniform_vectors(nq, dim, 4);
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = 1000 + 7 * i;
  qv_index_t* on_gpu = make_index(c.cuda, dim, QV_METRIC_L2, x, ids.data());
  qv_index_t* on_cpu = make_index(c.cpu, dim, QV_METRIC_L2, x, ids.data());

  // A filter over ids: every third id allowed.
  std::vector<uint8_t> bits((1000 + 7 * n) / 8 + 1, 0);
  for (int64_t i = 0; i < n; i += 3) bits[ids[i] / 8] |= uint8_t(1u << (ids[i] % 8));
  qv_search_params_t params;
  qv_search_params_init(&params);
  params.filter = bits.data();
  params.filter_bits = static_cast<int64_t>(bits.size()) * 8;
  expect_same(search(on_gpu, q, dim, k, &params), search(on_cpu, q, dim, k, &params), 1e-4f);

  // Removal, then device-resident queries and outputs.
  const int64_t gone[] = {1000, 1007, 1014, 99};
  int64_t removed = 0;
  ASSERT_EQ(qv_index_remove(on_gpu, 4, gone, &removed), QV_OK);
  EXPECT_EQ(removed, 3);
  ASSERT_EQ(qv_index_remove(on_cpu, 4, gone, nullptr), QV_OK);
  DeviceArray<float> device_queries(q), device_distances(nq * k);
  DeviceArray<int64_t> device_ids(nq * k);
  auto search_into_device = [&] {
    EXPECT_EQ(qv_index_search(on_gpu, nq, device_queries.get(), k, nullptr, device_distances.get(),
                              device_ids.get()),
              QV_OK)
        << qv_last_error_message();
    return Result{device_distances.to_host(), device_ids.to_host()};
  };
  expect_same(search_into_device(), search(on_cpu, q, dim, k), 1e-4f);

  // The ids translated on the device follow later adds and removals.
  const int64_t more = 300;
  const auto y = uniform_vectors(more, dim, 5);
  std::vector<int64_t> more_ids(more);
  for (int64_t i = 0; i < more; ++i) more_ids[i] = 50000 + 3 * i;
  ASSERT_EQ(qv_index_add(on_gpu, more, y.data(), more_ids.data()), QV_OK) << qv_last_error_message();
  ASSERT_EQ(qv_index_add(on_cpu, more, y.data(), more_ids.data()), QV_OK);
  const Result after_add = search_into_device();
  expect_same(after_add, search(on_cpu, q, dim, k), 1e-4f);
  EXPECT_EQ(after_add.ids, search(on_gpu, q, dim, k).ids);  // host outputs: the same ids
  const int64_t gone_too[] = {50000, 1021, 50300};
  ASSERT_EQ(qv_index_remove(on_gpu, 3, gone_too, nullptr), QV_OK);
  ASSERT_EQ(qv_index_remove(on_cpu, 3, gone_too, nullptr), QV_OK);
  expect_same(search_into_device(), search(on_cpu, q, dim, k), 1e-4f);

  // Ids in device memory with distances on the host.
  std::vector<float> host_distances(nq * k);
  ASSERT_EQ(qv_index_search(on_gpu, nq, q.data(), k, nullptr, host_distances.data(), device_ids.get()), QV_OK)
      << qv_last_error_message();
  expect_same(Result{host_distances, device_ids.to_host()}, search(on_cpu, q, dim, k), 1e-4f);
  qv_index_free(on_gpu);
  qv_index_free(on_cpu);
}

TEST(GpuFlatCapi, SavedIndexesMoveBetweenDevices) {
  QV_REQUIRE_GPU();
  Contexts c;
  const int64_t n = 700, dim = 9;
  const auto x = uniform_vectors(n, dim, 5);
  const auto q = uniform_vectors(30, dim, 6);
  qv_index_t* on_gpu = make_index(c.cuda, dim, QV_METRIC_INNER_PRODUCT, x, nullptr);
  void* bytes = nullptr;
  size_t size = 0;
  ASSERT_EQ(qv_index_save_buffer(on_gpu, &bytes, &size), QV_OK) << qv_last_error_message();
  qv_index_t* on_cpu = nullptr;
  ASSERT_EQ(qv_index_load_buffer(c.cpu, bytes, size, &on_cpu), QV_OK) << qv_last_error_message();
  qv_index_t* back = nullptr;
  ASSERT_EQ(qv_index_load_buffer(c.cuda, bytes, size, &back), QV_OK) << qv_last_error_message();
  qv_buffer_free(bytes);
  expect_same(search(on_gpu, q, dim, 5), search(on_cpu, q, dim, 5), 1e-4f);
  expect_same(search(back, q, dim, 5), search(on_cpu, q, dim, 5), 1e-4f);
  // Range search runs (on the CPU) for a GPU index too.
  qv_range_result_t* range = nullptr;
  ASSERT_EQ(qv_index_range_search(back, 30, q.data(), 1.0f, nullptr, &range), QV_OK) << qv_last_error_message();
  qv_range_result_free(range);
  qv_index_free(on_gpu);
  qv_index_free(on_cpu);
  qv_index_free(back);
}

TEST(GpuFlatCapi, KnnAndKmeansOnTheGpu) {
  QV_REQUIRE_GPU();
  Contexts c;
  const int64_t n = 4000, dim = 24, nq = 50;
  const uint32_t k = 10;
  const auto x = uniform_vectors(n, dim, 7);
  const auto q = uniform_vectors(nq, dim, 8);
  Result gpu{std::vector<float>(nq * k), std::vector<int64_t>(nq * k)};
  Result cpu = gpu;
  ASSERT_EQ(qv_knn(c.cuda, QV_METRIC_L2, dim, n, x.data(), nq, q.data(), k, nullptr, gpu.distances.data(),
                   gpu.ids.data()),
            QV_OK)
      << qv_last_error_message();
  ASSERT_EQ(qv_knn(c.cpu, QV_METRIC_L2, dim, n, x.data(), nq, q.data(), k, nullptr, cpu.distances.data(),
                   cpu.ids.data()),
            QV_OK);
  expect_same(gpu, cpu, 1e-4f);

  std::vector<float> gpu_centroids(32 * dim), cpu_centroids(32 * dim);
  double gpu_objective = 0, cpu_objective = 0;
  ASSERT_EQ(qv_kmeans(c.cuda, dim, n, x.data(), 32, nullptr, gpu_centroids.data(), nullptr, &gpu_objective), QV_OK)
      << qv_last_error_message();
  ASSERT_EQ(qv_kmeans(c.cpu, dim, n, x.data(), 32, nullptr, cpu_centroids.data(), nullptr, &cpu_objective), QV_OK);
  EXPECT_NEAR(gpu_objective, cpu_objective, 0.01 * cpu_objective);
}

TEST(GpuFlatCapi, FastComputeModesKeepTheTopK) {
  QV_REQUIRE_GPU();
  Contexts c;
  const int64_t n = 20000, dim = 96, nq = 200;
  const uint32_t k = 10;
  auto x = uniform_vectors(n, dim, 9, 127.0f);
  auto q = uniform_vectors(nq, dim, 10, 127.0f);
  // Integer pixels, as in image data sets.
  for (auto& v : x) v = std::floor(v + 128.0f);
  for (auto& v : q) v = std::floor(v + 128.0f);
  qv_index_t* index = make_index(c.cuda, dim, QV_METRIC_L2, x, nullptr);
  const Result exact = search(index, q, dim, k);
  for (qv_compute_mode_t mode : {QV_COMPUTE_TF32, QV_COMPUTE_FP16, QV_COMPUTE_BF16}) {
    qv_search_params_t params;
    qv_search_params_init(&params);
    params.compute_mode = mode;
    const Result fast = search(index, q, dim, k, &params);
    int64_t same = 0;
    for (int64_t i = 0; i < nq; ++i)
      for (uint32_t a = 0; a < k; ++a)
        for (uint32_t b = 0; b < k; ++b) same += fast.ids[i * k + a] == exact.ids[i * k + b];
    EXPECT_GE(same, static_cast<int64_t>(0.999 * nq * k)) << "mode " << mode;
  }
  qv_index_free(index);
}

}  // namespace
}  // namespace quiver::testing
