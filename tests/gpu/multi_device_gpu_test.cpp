// Multi-device indexes on the GPU under device memory failures (gpu::fail_device_allocation_at): a
// shard whose device runs out of memory leaves its share of an add to the others; a failed add leaves
// every part as it was. Three logical devices of the test GPU stand in for three GPUs.
#include "../capi/test_util.h"
#include "cpp/backend/gpu.h"
#include "gpu_testing.h"

namespace quiver::testing {
namespace {

using namespace qvtest;

TEST(GpuMultiDevice, AddsSurviveEveryFailedDeviceAllocation) {
  QV_REQUIRE_GPU();
  Context ctx = MakeDevicesContext({test_device(), test_device(), test_device()});
  ASSERT_TRUE(ctx) << qv_last_error_message();
  const int64_t dim = 16, n = 500;
  const std::vector<float> base = RandomVectors(n, dim, 3), queries = RandomVectors(9, dim, 4);
  for (const char* descriptor : {"Sharded3,Flat", "Sharded3,IVF8,Flat", "Replicated3,Flat", "Replicated,Sharded3,IVF8,PQ4"}) {
    SCOPED_TRACE(descriptor);
    Index index = MakeIndex(ctx.get(), dim, QV_METRIC_L2, descriptor);
    ASSERT_TRUE(index) << qv_last_error_message();
    QV_ASSERT_OK(qv_index_train(index.get(), n, base.data()));
    QV_ASSERT_OK(qv_index_add(index.get(), n / 2, base.data(), nullptr));
    const std::vector<int64_t> before = SearchSnapshot(index.get(), queries, dim);
    bool succeeded = false;
    for (int64_t failing = 1; failing < 2000 && !succeeded; ++failing) {
      gpu::fail_device_allocation_at(failing);
      const qv_status_t status = qv_index_add(index.get(), n - n / 2, base.data() + n / 2 * dim, nullptr);
      gpu::fail_device_allocation_at(0);
      succeeded = status == QV_OK;
      if (succeeded) break;
      ASSERT_EQ(status, QV_ERR_OUT_OF_DEVICE_MEMORY) << "allocation " << failing << ": " << qv_last_error_message();
      ASSERT_EQ(SearchSnapshot(index.get(), queries, dim), before) << "allocation " << failing << " changed the index";
    }
    ASSERT_TRUE(succeeded);
    EXPECT_EQ(Count(index.get()), n);
  }
}

TEST(GpuMultiDevice, AShardOutOfMemoryLeavesItsShareToTheOthers) {
  QV_REQUIRE_GPU();
  Context ctx = MakeDevicesContext({test_device(), test_device(), test_device()});
  ASSERT_TRUE(ctx) << qv_last_error_message();
  const int64_t dim = 8, n = 300;
  const std::vector<float> base = RandomVectors(n, dim, 5);
  Index index = MakeIndex(ctx.get(), dim, QV_METRIC_L2, "Sharded3,Flat");
  // The first device allocation of the add fails: one shard is full, the other two take it all.
  gpu::fail_device_allocation_at(1);
  const qv_status_t status = qv_index_add(index.get(), n, base.data(), nullptr);
  gpu::fail_device_allocation_at(0);
  QV_ASSERT_OK(status);
  EXPECT_EQ(Count(index.get()), n);
  std::vector<float> d(1);
  std::vector<int64_t> ids(1);
  QV_ASSERT_OK(qv_index_search(index.get(), 1, &base[(n - 1) * dim], 1, nullptr, d.data(), ids.data()));
  EXPECT_EQ(ids[0], n - 1);
}

}  // namespace
}  // namespace quiver::testing
