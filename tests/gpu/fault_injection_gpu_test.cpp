// Fault injection on the GPU: every device allocation request of an add, a remove, a search, a range
// search and a load fails in turn (gpu::fail_device_allocation_at), for every kind on a CUDA
// context; each call returns QV_ERR_OUT_OF_DEVICE_MEMORY or succeeds (kinds that keep a host copy
// fall back to the CPU), and a failed call leaves the index answering as before.
#include "../capi/test_util.h"
#include "cpp/backend/gpu.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver::testing {
namespace {

using namespace qvtest;

Context MakeCudaContext() { return qvtest::MakeCudaContext(test_device()); }

template <typename Call>
qv_status_t with_failure_at(int64_t n, Call call) {
  gpu::fail_device_allocation_at(n);
  const qv_status_t status = call();
  gpu::fail_device_allocation_at(0);
  return status;
}

// Under the sanitizer, every fifth failure point only: each failure runs the same kernels again (a
// snapshot search a point), and every point took the sanitizers past their time limit.
int64_t failure_step() { return sanitizer_sizes() ? 5 : 1; }

// Walks the allocations of `call` until it succeeds; every failure must be out-of-device-memory
// and leave the answers unchanged.
template <typename Call>
void WalkAllocations(qv_index_t* index, const std::vector<float>& queries, int64_t dim, Call call) {
  const std::vector<int64_t> before = SearchSnapshot(index, queries, dim);
  for (int64_t n = 1; n < 10000; n += failure_step()) {
    const qv_status_t s = with_failure_at(n, call);
    if (s == QV_OK) return;
    ASSERT_EQ(s, QV_ERR_OUT_OF_DEVICE_MEMORY) << "allocation " << n << ": " << qv_last_error_message();
    ASSERT_EQ(SearchSnapshot(index, queries, dim), before) << "allocation " << n << " changed the index";
  }
  FAIL() << "the call never succeeded";
}

TEST(GpuFaultInjection, EveryKindSurvivesEveryFailedDeviceAllocation) {
  QV_REQUIRE_GPU();
  Context ctx = MakeCudaContext();
  const int64_t dim = 16;
  const std::vector<float> base = ClusteredVectors(600, dim, 8, 1, 2);
  const std::vector<float> more = ClusteredVectors(100, dim, 8, 1, 3);
  const std::vector<float> queries = ClusteredVectors(7, dim, 8, 1, 4);
  struct Kind {
    const char* descriptor;
    qv_metric_t metric;
    bool train;
  };
  for (const Kind& kind : {Kind{"Flat", QV_METRIC_L2, false}, Kind{"IVF8,Flat", QV_METRIC_L2, true},
                           Kind{"IVF8,PQ4,Refine", QV_METRIC_INNER_PRODUCT, true}, Kind{"Graph8", QV_METRIC_L2, false},
                           Kind{"LC8", QV_METRIC_L1, false}, Kind{"SSS0.5", QV_METRIC_LINF, false}}) {
    SCOPED_TRACE(kind.descriptor);
    Index index = MakeIndex(ctx.get(), dim, kind.metric, kind.descriptor);
    ASSERT_TRUE(index) << qv_last_error_message();
    if (kind.train) QV_ASSERT_OK(qv_index_train(index.get(), 600, base.data()));
    QV_ASSERT_OK(qv_index_add(index.get(), 600, base.data(), nullptr));
    WalkAllocations(index.get(), queries, dim, [&] { return qv_index_add(index.get(), 100, more.data(), nullptr); });
    std::vector<int64_t> ids;
    for (int64_t id = 0; id < 700; id += 5) ids.push_back(id);
    WalkAllocations(index.get(), queries, dim, [&] {
      return qv_index_remove(index.get(), static_cast<int64_t>(ids.size()), ids.data(), nullptr);
    });
    void* buffer = nullptr;
    size_t size = 0;
    QV_ASSERT_OK(qv_index_save_buffer(index.get(), &buffer, &size));
    Buffer saved(buffer);
    for (int64_t n = 1; n < 60; n += failure_step()) {
      std::vector<float> d(21);
      std::vector<int64_t> found(21);
      qv_status_t s = with_failure_at(
          n, [&] { return qv_index_search(index.get(), 7, queries.data(), 3, nullptr, d.data(), found.data()); });
      ASSERT_TRUE(s == QV_OK || s == QV_ERR_OUT_OF_DEVICE_MEMORY) << n << ": " << qv_status_string(s);
      qv_range_result_t* raw = nullptr;
      s = with_failure_at(n, [&] { return qv_index_range_search(index.get(), 7, queries.data(), 2.0f, nullptr, &raw); });
      ASSERT_TRUE(s == QV_OK || s == QV_ERR_OUT_OF_DEVICE_MEMORY) << n << ": " << qv_status_string(s);
      ASSERT_EQ(raw != nullptr, s == QV_OK);
      qv_range_result_free(raw);
      qv_index_t* loaded = nullptr;
      s = with_failure_at(n, [&] { return qv_index_load_buffer(ctx.get(), buffer, size, &loaded); });
      ASSERT_TRUE(s == QV_OK || s == QV_ERR_OUT_OF_DEVICE_MEMORY) << n << ": " << qv_status_string(s);
      ASSERT_EQ(loaded != nullptr, s == QV_OK);
      qv_index_free(loaded);
    }
    EXPECT_EQ(Count(index.get()), 700 - static_cast<int64_t>(ids.size()));
  }
}

}  // namespace
}  // namespace quiver::testing
