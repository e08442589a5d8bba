// qv_index_info: every field, and how it follows adds and removes.
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

TEST(CapiInfo, Fields) {
  Context ctx = MakeCpuContext(2);
  ASSERT_TRUE(ctx);
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    const int64_t dim = 37;
    Index idx = MakeIndex(ctx.get(), dim, metric);
    ASSERT_TRUE(idx) << qv_last_error_message();

    qv_index_info_t info;
    std::memset(&info, 0x77, sizeof info);
    QV_ASSERT_OK(qv_index_info_init(&info));
    QV_ASSERT_OK(qv_index_info(idx.get(), &info));
    EXPECT_EQ(info.struct_size, sizeof(qv_index_info_t));
    EXPECT_EQ(info.dim, dim);
    EXPECT_EQ(info.metric, metric);
    EXPECT_EQ(info.is_trained, 1);  // Flat needs no training
    EXPECT_EQ(info.count, 0);
    EXPECT_EQ(info.device, QV_DEVICE_CPU);
    EXPECT_EQ(info.device_id, -1);
    EXPECT_GE(info.host_bytes, 0);
    EXPECT_EQ(info.device_bytes, 0);
    EXPECT_STREQ(info.descriptor, "Flat");
    const int64_t empty_bytes = info.host_bytes;

    const int64_t n = 250;
    std::vector<float> x = RandomVectors(n, dim, 501);
    QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
    QV_ASSERT_OK(qv_index_info(idx.get(), &info));
    EXPECT_EQ(info.count, n);
    EXPECT_GT(info.host_bytes, 0);
    // At least the vectors themselves are held.
    EXPECT_GE(info.host_bytes, n * dim * static_cast<int64_t>(sizeof(float)));
    EXPECT_GE(info.host_bytes, empty_bytes);
    EXPECT_EQ(info.device_bytes, 0);
    EXPECT_EQ(info.dim, dim);
    EXPECT_EQ(info.metric, metric);
    EXPECT_STREQ(info.descriptor, "Flat");

    std::vector<int64_t> gone = {0, 1, 2, 3, 4};
    QV_ASSERT_OK(qv_index_remove(idx.get(), 5, gone.data(), nullptr));
    QV_ASSERT_OK(qv_index_info(idx.get(), &info));
    EXPECT_EQ(info.count, n - 5);
  }
}

TEST(CapiInfo, DescriptorIsNulTerminatedWithinItsArray) {
  Context ctx = MakeCpuContext(2);
  ASSERT_TRUE(ctx);
  Index idx = MakeIndex(ctx.get(), 3, QV_METRIC_L2);
  ASSERT_TRUE(idx);
  qv_index_info_t info;
  std::memset(&info, 'Z', sizeof info);
  QV_ASSERT_OK(qv_index_info_init(&info));
  QV_ASSERT_OK(qv_index_info(idx.get(), &info));
  EXPECT_NE(std::memchr(info.descriptor, '\0', sizeof info.descriptor), nullptr);
  EXPECT_STREQ(info.descriptor, "Flat");
}

TEST(CapiInfo, BadArguments) {
  Context ctx = MakeCpuContext(2);
  ASSERT_TRUE(ctx);
  Index idx = MakeIndex(ctx.get(), 3, QV_METRIC_L2);
  ASSERT_TRUE(idx);
  qv_index_info_t info;
  QV_ASSERT_OK(qv_index_info_init(&info));
  EXPECT_TRUE(FailsNaming(qv_index_info(nullptr, &info), QV_ERR_INVALID_ARGUMENT, "index"));
  EXPECT_TRUE(FailsNaming(qv_index_info(idx.get(), nullptr), QV_ERR_INVALID_ARGUMENT, "info"));
  EXPECT_TRUE(FailsNaming(qv_index_info_init(nullptr), QV_ERR_INVALID_ARGUMENT, "info"));
  // A success afterwards clears the message.
  QV_ASSERT_OK(qv_index_info(idx.get(), &info));
  EXPECT_STREQ(qv_last_error_message(), "");
}

}  // namespace
