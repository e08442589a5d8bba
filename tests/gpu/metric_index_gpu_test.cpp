// Metric-space indexes ("Flat" of L1 / L-infinity / edit distance, "LC<b>", "SSS<alpha>") on a CUDA
// context through the C API: the checks of the CPU suite (tests/capi/metric_space_checks.h), now
// answered by the device copy (cuda/metric/), and the same answers as a CPU context after adds,
// removals and a reload.
#include "../capi/metric_space_checks.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver::testing {
namespace {

using namespace qvtest;

Context MakeCudaContext() { return qvtest::MakeCudaContext(test_device()); }

TEST(GpuMetricIndex, StringIndexesEqualTheReference) {
  QV_REQUIRE_GPU();
  Context ctx = MakeCudaContext();
  // Every n runs 42 searches (6 descriptors, 4 radii, 3 k). Under the sanitizer two sizes: fewer rows
  // than k = 5, and several hundred (LC1: about 150 clusters), with 13 queries.
  const std::vector<int64_t> sizes = sanitizer_sizes() ? std::vector<int64_t>{2, 301}
                                                       : std::vector<int64_t>{1, 2, 33, 301, 1000};
  for (int64_t n : sizes) {
    SCOPED_TRACE(n);
    CheckStringIndexes(ctx.get(), n, sized(37, 13));
  }
}

TEST(GpuMetricIndex, VectorIndexesEqualTheReference) {
  QV_REQUIRE_GPU();
  Context ctx = MakeCudaContext();
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_L1, QV_METRIC_LINF}) {
    for (int64_t dim : {1, 3, 17, 130}) {
      SCOPED_TRACE(std::string(MetricName(metric)) + " dim " + std::to_string(dim));
      CheckVectorIndexes(ctx.get(), metric, 203, dim, 29);
    }
  }
}

// Adds in batches, removals (centres and pivots among them), a save on the GPU loaded on the CPU:
// both answer the same, exactly.
TEST(GpuMetricIndex, SameAnswersAsTheCpuAfterChanges) {
  QV_REQUIRE_GPU();
  Context cuda = MakeCudaContext();
  Context cpu = MakeCpuContext();
  const StringSet words = RandomWords(700, 21);
  const StringSet queries = QueryWords(words, 101, 22);
  for (const char* descriptor : {"Flat", "LC16", "SSS0.5"}) {
    SCOPED_TRACE(descriptor);
    Index index = MakeStringIndex(cuda.get(), descriptor);
    ASSERT_TRUE(index);
    QV_ASSERT_OK(qv_index_add_strings(index.get(), 600, words.offsets.data(), words.bytes.data(), nullptr));
    std::vector<int64_t> removed;
    for (int64_t id = 1; id < 600; id += 4) removed.push_back(id);
    QV_ASSERT_OK(qv_index_remove(index.get(), static_cast<int64_t>(removed.size()), removed.data(), nullptr));
    std::vector<int64_t> tail(words.offsets.begin() + 600, words.offsets.end());
    QV_ASSERT_OK(qv_index_add_strings(index.get(), 100, tail.data(), words.bytes.data(), nullptr));
    void* buffer = nullptr;
    size_t size = 0;
    QV_ASSERT_OK(qv_index_save_buffer(index.get(), &buffer, &size));
    Buffer owned(buffer);
    qv_index_t* raw = nullptr;
    QV_ASSERT_OK(qv_index_load_buffer(cpu.get(), buffer, size, &raw));
    Index on_cpu(raw);
    for (float radius : {0.0f, 2.0f, 4.0f}) {
      qv_range_result_t *a = nullptr, *b = nullptr;
      QV_ASSERT_OK(qv_index_range_search_strings(index.get(), queries.size(), queries.offsets.data(),
                                                 queries.bytes.data(), radius, nullptr, &a));
      QV_ASSERT_OK(qv_index_range_search_strings(on_cpu.get(), queries.size(), queries.offsets.data(),
                                                 queries.bytes.data(), radius, nullptr, &b));
      RangeResult ra(a), rb(b);
      const int64_t *la, *lb, *ia, *ib;
      const float *da, *db;
      QV_ASSERT_OK(qv_range_result_get(ra.get(), nullptr, &la, &ia, &da));
      QV_ASSERT_OK(qv_range_result_get(rb.get(), nullptr, &lb, &ib, &db));
      ASSERT_EQ(std::vector<int64_t>(la, la + queries.size() + 1), std::vector<int64_t>(lb, lb + queries.size() + 1));
      EXPECT_EQ(std::vector<int64_t>(ia, ia + la[queries.size()]), std::vector<int64_t>(ib, ib + lb[queries.size()]));
      EXPECT_EQ(std::vector<float>(da, da + la[queries.size()]), std::vector<float>(db, db + lb[queries.size()]));
    }
    const uint32_t k = 9;
    std::vector<float> dg(queries.size() * k), dc(queries.size() * k);
    std::vector<int64_t> ig(queries.size() * k), ic(queries.size() * k);
    QV_ASSERT_OK(qv_index_search_strings(index.get(), queries.size(), queries.offsets.data(), queries.bytes.data(), k,
                                         nullptr, dg.data(), ig.data()));
    QV_ASSERT_OK(qv_index_search_strings(on_cpu.get(), queries.size(), queries.offsets.data(), queries.bytes.data(),
                                         k, nullptr, dc.data(), ic.data()));
    EXPECT_EQ(ig, ic);
    EXPECT_EQ(dg, dc);
  }
}

// The device finds a row by its distance that the caller's squared radius excludes; the host drops it
// (CheckL2HitsPastTheSquaredRadiusAreDropped).
TEST(GpuMetricIndex, L2HitsPastTheSquaredRadiusAreDropped) {
  QV_REQUIRE_GPU();
  Context ctx = MakeCudaContext();
  CheckL2HitsPastTheSquaredRadiusAreDropped(ctx.get());
}

TEST(GpuMetricIndex, TooManyResultsOnTheDevice) {
  QV_REQUIRE_GPU();
  Context ctx = MakeCudaContext();
  const StringSet words = RandomWords(300, 4);
  qv_search_params_t params;
  QV_ASSERT_OK(qv_search_params_init(&params));
  params.max_range_results = 10;
  for (const char* descriptor : {"Flat", "LC8", "SSS0.5"}) {
    Index index = MakeStringIndex(ctx.get(), descriptor);
    QV_ASSERT_OK(qv_index_add_strings(index.get(), 300, words.offsets.data(), words.bytes.data(), nullptr));
    qv_range_result_t* raw = nullptr;
    EXPECT_EQ(qv_index_range_search_strings(index.get(), 5, words.offsets.data(), words.bytes.data(), 1000.0f,
                                            &params, &raw),
              QV_ERR_TOO_MANY_RESULTS)
        << descriptor;
    EXPECT_EQ(raw, nullptr);
  }
}

}  // namespace
}  // namespace quiver::testing
