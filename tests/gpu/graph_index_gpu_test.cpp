// The graph index ("Graph<R>") on a CUDA context: searches run on the device (SONG) over the same
// stored graph as the CPU's beam search; the recall against exact search matches the CPU's, filters
// and removals are honoured, and a saved index loads on either device with the same results.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu_testing.h"
#include "sanitizer_sizes.h"
#include "quiver/quiver.h"

namespace quiver::testing {
namespace {

constexpr int64_t kDim = 24, kN = 3001, kNq = 200;
constexpr uint32_t kK = 10;

qv_context_t* make_context(qv_device_kind_t device) {
  qv_context_options_t o;
  qv_context_options_init(&o);
  o.device = device;
  o.device_id = device == QV_DEVICE_CUDA ? test_device() : 0;
  o.cpu_threads = 2;
  qv_context_t* ctx = nullptr;
  EXPECT_EQ(qv_context_create(&o, &ctx), QV_OK) << qv_last_error_message();
  return ctx;
}

struct Found {
  std::vector<float> distances;
  std::vector<int64_t> ids;
};

Found search(const qv_index_t* index, const std::vector<float>& q, uint32_t width, const uint8_t* filter = nullptr,
             int64_t filter_bits = 0, qv_compute_mode_t mode = QV_COMPUTE_FP32) {
  qv_search_params_t p;
  qv_search_params_init(&p);
  p.search_width = width;
  p.compute_mode = mode;
  p.filter = filter;
  p.filter_bits = filter_bits;
  Found f{std::vector<float>(kNq * kK), std::vector<int64_t>(kNq * kK)};
  EXPECT_EQ(qv_index_search(index, kNq, q.data(), kK, &p, f.distances.data(), f.ids.data()), QV_OK)
      << qv_last_error_message();
  return f;
}

double recall(const Found& got, const Found& truth) {
  int64_t hits = 0;
  for (int64_t i = 0; i < kNq; ++i)
    for (int64_t j = 0; j < kK; ++j)
      hits += std::count(&truth.ids[i * kK], &truth.ids[i * kK] + kK, got.ids[i * kK + j]);
  return double(hits) / double(kNq * kK);
}

qv_index_t* filled(qv_context_t* ctx, const char* descriptor, const std::vector<float>& x, const int64_t* ids) {
  qv_index_t* index = nullptr;
  EXPECT_EQ(qv_index_create(ctx, descriptor, kDim, QV_METRIC_L2, &index), QV_OK) << qv_last_error_message();
  EXPECT_EQ(qv_index_add(index, kN, x.data(), ids), QV_OK) << qv_last_error_message();
  return index;
}

TEST(GpuGraphIndex, SearchesOnTheDeviceAsWellAsTheCpu) {
  QV_REQUIRE_GPU();
  qv_context_t* gpu = make_context(QV_DEVICE_CUDA);
  qv_context_t* cpu = make_context(QV_DEVICE_CPU);
  const auto x = uniform_vectors(kN, kDim, 21), q = uniform_vectors(kNq, kDim, 22);
  std::vector<int64_t> ids(kN);
  for (int64_t i = 0; i < kN; ++i) ids[i] = 5 * i + 3;
  qv_index_t* on_gpu = filled(gpu, "Graph16", x, ids.data());
  qv_index_t* flat = filled(cpu, "Flat", x, ids.data());
  qv_index_info_t info;
  qv_index_info_init(&info);
  ASSERT_EQ(qv_index_info(on_gpu, &info), QV_OK);
  EXPECT_EQ(info.device, QV_DEVICE_CUDA);
  EXPECT_GT(info.device_bytes, int64_t(kN * kDim * 4));

  // The same saved index on the CPU: the same graph, searched by the CPU's beam search.
  void* data = nullptr;
  size_t size = 0;
  ASSERT_EQ(qv_index_save_buffer(on_gpu, &data, &size), QV_OK);
  qv_index_t* on_cpu = nullptr;
  ASSERT_EQ(qv_index_load_buffer(cpu, data, size, &on_cpu), QV_OK) << qv_last_error_message();
  qv_index_t* reloaded = nullptr;
  ASSERT_EQ(qv_index_load_buffer(gpu, data, size, &reloaded), QV_OK) << qv_last_error_message();
  qv_buffer_free(data);

  const Found truth = search(flat, q, 0);
  for (uint32_t width : {16u, 64u, 256u}) {
    const Found g = search(on_gpu, q, width), c = search(on_cpu, q, width);
    EXPECT_GE(recall(g, truth), recall(c, truth) - 0.02) << "width " << width;
    EXPECT_EQ(search(reloaded, q, width).ids, g.ids) << "width " << width;
  }
  EXPECT_GE(recall(search(on_gpu, q, 256), truth), 0.98);
  // Half-precision walks: about the same recall, exact distances.
  for (qv_compute_mode_t mode : {QV_COMPUTE_FP16, QV_COMPUTE_BF16}) {
    const Found h = search(on_gpu, q, 64, nullptr, 0, mode), f = search(on_gpu, q, 64);
    EXPECT_GE(recall(h, truth), recall(f, truth) - 0.01) << "mode " << mode;
    for (size_t i = 0; i < h.ids.size(); ++i)
      if (h.ids[i] == f.ids[i]) EXPECT_EQ(h.distances[i], f.distances[i]) << i;
  }

  // A filter (every other id) and removals: never returned, and the CPU's results at a wide queue.
  std::vector<uint8_t> bits((5 * kN + 3) / 8 + 1, 0);
  for (int64_t i = 0; i < kN; i += 2) bits[ids[i] / 8] |= uint8_t(1u << (ids[i] % 8));
  const Found filtered = search(on_gpu, q, 128, bits.data(), int64_t(bits.size()) * 8);
  const Found filtered_truth = search(flat, q, 0, bits.data(), int64_t(bits.size()) * 8);
  for (int64_t id : filtered.ids) EXPECT_TRUE(id >= 0 && (id - 3) / 5 % 2 == 0) << id;
  EXPECT_GE(recall(filtered, filtered_truth), 0.95);
  const int64_t gone[] = {ids[0], ids[1], ids[2], ids[3]};
  ASSERT_EQ(qv_index_remove(on_gpu, 4, gone, nullptr), QV_OK);
  for (int64_t id : search(on_gpu, q, 64).ids)
    for (int64_t g : gone) EXPECT_NE(id, g);

  qv_index_free(on_gpu);
  qv_index_free(on_cpu);
  qv_index_free(reloaded);
  qv_index_free(flat);
  qv_context_free(gpu);
  qv_context_free(cpu);
}

// SONG's hashing mode: the device holds 256-bit codes, not the vectors; the walk's candidates are
// re-ranked exactly on the host, so distances are exact and a wide queue finds nearly every
// neighbour; filters, removals and a reload behave as with vectors on the device.
TEST(GpuGraphIndex, HashedWalkReranksFromHostMemory) {
  QV_REQUIRE_GPU();
  qv_context_t* gpu = make_context(QV_DEVICE_CUDA);
  qv_context_t* cpu = make_context(QV_DEVICE_CPU);
  const auto x = uniform_vectors(kN, kDim, 31), q = uniform_vectors(kNq, kDim, 32);
  std::vector<int64_t> ids(kN);
  for (int64_t i = 0; i < kN; ++i) ids[i] = 7 * i + 1;
  qv_index_t* hashed = filled(gpu, "Graph16,H256", x, ids.data());
  qv_index_t* flat = filled(cpu, "Flat", x, ids.data());
  qv_index_info_t info;
  qv_index_info_init(&info);
  ASSERT_EQ(qv_index_info(hashed, &info), QV_OK);
  EXPECT_EQ(info.device, QV_DEVICE_CUDA);
  // Codes (32 bytes a row) and the graph (64 bytes a row) with ids, no vectors (96 bytes a row).
  EXPECT_LT(info.device_bytes, int64_t(kN * (32 + 64 + 8 + 16)));

  const Found truth = search(flat, q, 0);
  const Found wide = search(hashed, q, 256);
  EXPECT_GE(recall(wide, truth), 0.9);
  for (size_t i = 0; i < wide.ids.size(); ++i) {
    const auto at = std::find(truth.ids.begin() + i / kK * kK, truth.ids.begin() + i / kK * kK + kK, wide.ids[i]);
    if (at == truth.ids.begin() + i / kK * kK + kK) continue;
    const float want = truth.distances[at - truth.ids.begin()];  // exact up to summation order
    EXPECT_NEAR(wide.distances[i], want, 1e-5f * (1 + want));
  }
  EXPECT_GE(recall(search(hashed, q, 1024), truth), recall(search(hashed, q, 32), truth));

  std::vector<uint8_t> bits((7 * kN + 1) / 8 + 1, 0);
  for (int64_t i = 0; i < kN; i += 3) bits[ids[i] / 8] |= uint8_t(1u << (ids[i] % 8));
  for (int64_t id : search(hashed, q, 128, bits.data(), int64_t(bits.size()) * 8).ids)
    EXPECT_TRUE(id >= 0 && (id - 1) / 7 % 3 == 0) << id;

  void* data = nullptr;
  size_t size = 0;
  ASSERT_EQ(qv_index_save_buffer(hashed, &data, &size), QV_OK);
  qv_index_t* reloaded = nullptr;
  ASSERT_EQ(qv_index_load_buffer(gpu, data, size, &reloaded), QV_OK) << qv_last_error_message();
  qv_buffer_free(data);
  EXPECT_EQ(search(reloaded, q, 256).ids, wide.ids);

  const int64_t gone[] = {ids[0], ids[5], ids[9]};
  ASSERT_EQ(qv_index_remove(hashed, 3, gone, nullptr), QV_OK);
  for (int64_t id : search(hashed, q, 256).ids)
    for (int64_t g : gone) EXPECT_NE(id, g);

  qv_index_free(hashed);
  qv_index_free(reloaded);
  qv_index_free(flat);
  qv_context_free(gpu);
  qv_context_free(cpu);
}

// The build on a CUDA context refines graph 1 with SONG's walks (graph/device_refine.h) where the
// CPU walks with its beam search: the graphs differ, but the device's is as good. Both saved graphs
// are searched by the CPU's beam search; clustered data of 20 011 rows, enough for the entry layer
// (under the sanitizer 4 001, from the entry points).
TEST(GpuGraphIndex, BuildOnTheDeviceIsAsGoodAsOnTheHost) {
  QV_REQUIRE_GPU();
  qv_context_t* gpu = make_context(QV_DEVICE_CUDA);
  qv_context_t* cpu = make_context(QV_DEVICE_CPU);
  const int64_t n = sized(20011, 4001), clusters = 61;
  const std::vector<float> x = clustered_vectors(n, kDim, clusters, 41);
  const auto centres = uniform_vectors(clusters, kDim, 41, 10.0f);  // the queries' centres too
  const auto q = uniform_vectors(kNq, kDim, 43);
  std::vector<float> queries(q);
  for (int64_t i = 0; i < kNq; ++i)
    for (int64_t d = 0; d < kDim; ++d) queries[i * kDim + d] += centres[(i % clusters) * kDim + d];

  auto build = [&](qv_context_t* ctx, const char* descriptor) {
    qv_index_t* index = nullptr;
    EXPECT_EQ(qv_index_create(ctx, descriptor, kDim, QV_METRIC_L2, &index), QV_OK) << qv_last_error_message();
    EXPECT_EQ(qv_index_add(index, n, x.data(), nullptr), QV_OK) << qv_last_error_message();
    return index;
  };
  qv_index_t* on_gpu = build(gpu, "Graph16");
  qv_index_t* on_cpu = build(cpu, "Graph16");
  qv_index_t* flat = build(cpu, "Flat");
  void* data = nullptr;
  size_t size = 0;
  ASSERT_EQ(qv_index_save_buffer(on_gpu, &data, &size), QV_OK);
  qv_index_t* gpu_built = nullptr;  // searched on the CPU
  ASSERT_EQ(qv_index_load_buffer(cpu, data, size, &gpu_built), QV_OK) << qv_last_error_message();
  qv_buffer_free(data);

  const Found truth = search(flat, queries, 0);
  for (uint32_t width : {10u, 16u, 32u}) {
    const double device = recall(search(gpu_built, queries, width), truth);
    const double host = recall(search(on_cpu, queries, width), truth);
    EXPECT_GE(device, host - 0.02) << "width " << width;
    std::printf("[ recall ] width %u: graph built on the device %.4f, on the host %.4f\n", width, device, host);
  }
  qv_index_free(on_gpu);
  qv_index_free(on_cpu);
  qv_index_free(gpu_built);
  qv_index_free(flat);
  qv_context_free(gpu);
  qv_context_free(cpu);
}

}  // namespace
}  // namespace quiver::testing
