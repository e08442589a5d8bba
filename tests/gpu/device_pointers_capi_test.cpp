// Every index kind on a CUDA context takes its inputs and outputs in device memory (quiver.h: "the
// library detects which"): training and added vectors, added and removed ids, queries, distances and
// ids, each alone or together, with the results of host memory. Kinds that compute on the host
// (graph walks that finish on the CPU, metric-space indexes) get host copies; none reads or writes a
// device pointer on the host.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "gpu_testing.h"
#include "quiver/quiver.h"

namespace quiver::testing {
namespace {

struct TestContext {
  qv_context_t* ctx = nullptr;
  explicit TestContext(int32_t device) {
    qv_context_options_t o;
    qv_context_options_init(&o);
    o.device = device;
    o.cpu_threads = 4;
    if (device == QV_DEVICE_CUDA) o.device_id = test_device();
    EXPECT_EQ(qv_context_create(&o, &ctx), QV_OK) << qv_last_error_message();
  }
  ~TestContext() { qv_context_free(ctx); }
};

struct Results {
  std::vector<float> distances;
  std::vector<int64_t> ids;
  bool operator==(const Results& o) const { return distances == o.distances && ids == o.ids; }
};

// Where a search's queries, distances and ids live.
struct Placement {
  bool queries, distances, ids;  // true: device memory
};

Results search(const qv_index_t* index, const std::vector<float>& q, int64_t dim, uint32_t k, Placement at,
               const qv_search_params_t* params = nullptr) {
  const int64_t nq = int64_t(q.size()) / dim;
  const size_t size = size_t(nq) * k;
  DeviceArray<float> device_queries(q), device_distances(size);
  DeviceArray<int64_t> device_ids(size);
  Results host{std::vector<float>(size), std::vector<int64_t>(size)};
  EXPECT_EQ(qv_index_search(index, nq, at.queries ? device_queries.get() : q.data(), k, params,
                            at.distances ? device_distances.get() : host.distances.data(),
                            at.ids ? device_ids.get() : host.ids.data()),
            QV_OK)
      << qv_last_error_message();
  if (at.distances) host.distances = device_distances.to_host();
  if (at.ids) host.ids = device_ids.to_host();
  return host;
}

// Each placement's search gives exactly `expected` (the search with everything in host memory).
void expect_same_everywhere(const qv_index_t* index, const std::vector<float>& q, int64_t dim, uint32_t k,
                            const Results& expected, std::initializer_list<Placement> placements,
                            const qv_search_params_t* params = nullptr) {
  for (const Placement at : placements) {
    SCOPED_TRACE(::testing::Message() << "device queries " << at.queries << ", distances " << at.distances
                                      << ", ids " << at.ids);
    EXPECT_TRUE(search(index, q, dim, k, at, params) == expected);
  }
}

TEST(GpuDevicePointers, EveryKindTakesDeviceInputsAndOutputs) {
  QV_REQUIRE_GPU();
  TestContext cuda(QV_DEVICE_CUDA);
  const int64_t n = 2500, dim = 32, nq = 37;
  const uint32_t k = 10;
  const std::vector<float> x = uniform_vectors(n, dim, 31), q = uniform_vectors(nq, dim, 32);
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = 5 + 3 * i;
  const DeviceArray<float> device_x(x);
  const DeviceArray<int64_t> device_ids(ids);
  const int64_t gone[] = {5, 8, 3 * 100 + 5, 7};  // three held, one not
  const DeviceArray<int64_t> device_gone(std::vector<int64_t>(std::begin(gone), std::end(gone)));
  for (const char* descriptor : {"Flat", "IVF16,Flat", "IVF16,Flat,HostIds", "IVF16,PQ8", "Graph16", "Graph16,H64",
                                 "LC16", "SSS0.4"}) {
    SCOPED_TRACE(descriptor);
    // The same index built from host and from device memory.
    qv_index_t* from_host = nullptr;
    qv_index_t* from_device = nullptr;
    ASSERT_EQ(qv_index_create(cuda.ctx, descriptor, dim, QV_METRIC_L2, &from_host), QV_OK) << qv_last_error_message();
    ASSERT_EQ(qv_index_create(cuda.ctx, descriptor, dim, QV_METRIC_L2, &from_device), QV_OK);
    ASSERT_EQ(qv_index_train(from_host, n, x.data()), QV_OK) << qv_last_error_message();
    ASSERT_EQ(qv_index_train(from_device, n, device_x.get()), QV_OK) << qv_last_error_message();
    ASSERT_EQ(qv_index_add(from_host, n, x.data(), ids.data()), QV_OK) << qv_last_error_message();
    ASSERT_EQ(qv_index_add(from_device, n, device_x.get(), device_ids.get()), QV_OK) << qv_last_error_message();
    int64_t removed_host = 0, removed_device = 0;
    ASSERT_EQ(qv_index_remove(from_host, 4, gone, &removed_host), QV_OK) << qv_last_error_message();
    ASSERT_EQ(qv_index_remove(from_device, 4, device_gone.get(), &removed_device), QV_OK) << qv_last_error_message();
    EXPECT_EQ(removed_host, 3);
    EXPECT_EQ(removed_device, 3);

    for (qv_index_t* index : {from_host, from_device}) {
      SCOPED_TRACE(index == from_host ? "built from host memory" : "built from device memory");
      const Results expected = search(index, q, dim, k, {false, false, false});
      for (int64_t id : expected.ids) {
        EXPECT_TRUE(id >= 5 && id < 5 + 3 * n && (id - 5) % 3 == 0) << id;
        EXPECT_TRUE(id != 5 && id != 8 && id != 305) << id << " was removed";
      }
      expect_same_everywhere(index, q, dim, k, expected,
                             {{true, true, true}, {false, true, true}, {true, false, false}, {false, false, true},
                              {true, true, false}});
    }
    qv_index_free(from_host);
    qv_index_free(from_device);
  }
}

// A filter leaves every walk short of k rows: the CPU completes those queries, reading device queries
// and writing device outputs through host copies.
TEST(GpuDevicePointers, GraphQueriesLeftShortAreCompletedInDeviceOutputs) {
  QV_REQUIRE_GPU();
  TestContext cuda(QV_DEVICE_CUDA);
  const int64_t n = 3000, dim = 24, nq = 9;
  const uint32_t k = 10;
  const std::vector<float> x = uniform_vectors(n, dim, 35), q = uniform_vectors(nq, dim, 36);
  qv_index_t* index = nullptr;
  ASSERT_EQ(qv_index_create(cuda.ctx, "Graph16", dim, QV_METRIC_L2, &index), QV_OK);
  ASSERT_EQ(qv_index_add(index, n, x.data(), nullptr), QV_OK) << qv_last_error_message();
  std::vector<uint8_t> bits(size_t(n + 7) / 8, 0);
  const int64_t allowed[] = {3, 500, 1201, 1999, 2500, 2999};
  for (int64_t id : allowed) bits[size_t(id / 8)] |= uint8_t(1u << (id % 8));
  qv_search_params_t params;
  qv_search_params_init(&params);
  params.filter = bits.data();
  params.filter_bits = n;
  const Results expected = search(index, q, dim, k, {false, false, false}, &params);
  for (int64_t i = 0; i < nq; ++i) {
    std::vector<int64_t> got(expected.ids.begin() + i * k, expected.ids.begin() + (i + 1) * k);
    std::sort(got.begin(), got.begin() + 6);
    EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + 6),
              std::vector<int64_t>(std::begin(allowed), std::end(allowed)));
    for (uint32_t j = 6; j < k; ++j) EXPECT_EQ(got[j], -1);
  }
  expect_same_everywhere(index, q, dim, k, expected, {{true, true, true}, {false, true, false}, {true, false, true}},
                         &params);
  qv_index_free(index);
}

TEST(GpuDevicePointers, ACpuContextRefusesDeviceMemory) {
  QV_REQUIRE_GPU();
  TestContext cpu(QV_DEVICE_CPU);
  const int64_t n = 200, dim = 8, nq = 3;
  const uint32_t k = 4;
  const std::vector<float> x = uniform_vectors(n, dim, 33), q = uniform_vectors(nq, dim, 34);
  const std::vector<int64_t> ids(size_t(n), 0);
  const DeviceArray<int64_t> device_ids(ids), device_out(size_t(nq) * k);
  const DeviceArray<float> device_distances(size_t(nq) * k);
  for (const char* descriptor : {"Flat", "Graph16"}) {
    SCOPED_TRACE(descriptor);
    qv_index_t* index = nullptr;
    ASSERT_EQ(qv_index_create(cpu.ctx, descriptor, dim, QV_METRIC_L2, &index), QV_OK);
    EXPECT_EQ(qv_index_add(index, n, x.data(), device_ids.get()), QV_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(qv_last_error_message()).find("GPU memory"), std::string::npos) << qv_last_error_message();
    ASSERT_EQ(qv_index_add(index, n, x.data(), nullptr), QV_OK) << qv_last_error_message();
    std::vector<float> distances(size_t(nq) * k);
    std::vector<int64_t> found(size_t(nq) * k);
    EXPECT_EQ(qv_index_search(index, nq, q.data(), k, nullptr, distances.data(), device_out.get()),
              QV_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qv_index_search(index, nq, q.data(), k, nullptr, device_distances.get(), found.data()),
              QV_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(qv_last_error_message()).find("GPU memory"), std::string::npos) << qv_last_error_message();
    EXPECT_EQ(qv_index_remove(index, n, device_ids.get(), nullptr), QV_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qv_index_search(index, nq, q.data(), k, nullptr, distances.data(), found.data()), QV_OK);
    qv_index_free(index);
  }
}

}  // namespace
}  // namespace quiver::testing
