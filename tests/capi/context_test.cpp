// Contexts: options, device resolution (CPU, AUTO, CUDA without a GPU), the CUDA device count.
#include <thread>
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

int32_t CudaDevices() {
  int32_t count = -1;
  if (qv_cuda_device_count(&count) != QV_OK) return -1;
  return count;
}

TEST(CapiContext, OptionsInitDefaults) {
  qv_context_options_t opts;
  std::memset(&opts, 0xAB, sizeof opts);
  QV_ASSERT_OK(qv_context_options_init(&opts));
  EXPECT_EQ(opts.struct_size, sizeof(qv_context_options_t));
  EXPECT_EQ(opts.device, QV_DEVICE_AUTO);
  EXPECT_EQ(opts.device_id, 0);
  EXPECT_EQ(opts.cpu_threads, 0);
}

TEST(CapiContext, OptionsInitNull) {
  EXPECT_TRUE(
      FailsNamingAny(qv_context_options_init(nullptr), QV_ERR_INVALID_ARGUMENT, {"options"}));
}

TEST(CapiContext, CpuContextResolvesToCpu) {
  Context ctx = MakeCpuContext(2);
  ASSERT_TRUE(ctx) << qv_last_error_message();
  qv_device_kind_t kind = -5;
  int32_t id = 99;
  QV_ASSERT_OK(qv_context_device(ctx.get(), &kind, &id));
  EXPECT_EQ(kind, QV_DEVICE_CPU);
  EXPECT_EQ(id, -1);
  // Either output may be NULL.
  kind = -5;
  QV_EXPECT_OK(qv_context_device(ctx.get(), &kind, nullptr));
  EXPECT_EQ(kind, QV_DEVICE_CPU);
  id = 99;
  QV_EXPECT_OK(qv_context_device(ctx.get(), nullptr, &id));
  EXPECT_EQ(id, -1);
  QV_EXPECT_OK(qv_context_device(ctx.get(), nullptr, nullptr));
}

TEST(CapiContext, CpuThreadCounts) {
  for (int32_t threads : {0, 1, 2, 3}) {
    Context ctx = MakeCpuContext(threads);
    EXPECT_TRUE(ctx) << "cpu_threads " << threads << ": " << qv_last_error_message();
  }
}

TEST(CapiContext, CudaDeviceCount) {
  int32_t count = -1;
  QV_ASSERT_OK(qv_cuda_device_count(&count));
  EXPECT_GE(count, 0);
  EXPECT_TRUE(FailsNamingAny(qv_cuda_device_count(nullptr), QV_ERR_INVALID_ARGUMENT, {"count"}));
}

TEST(CapiContext, CudaWithoutGpuIsNoDevice) {
  int32_t count = CudaDevices();
  ASSERT_GE(count, 0);
  if (count > 0) GTEST_SKIP() << "a CUDA device is present";
  qv_context_options_t opts;
  QV_ASSERT_OK(qv_context_options_init(&opts));
  opts.device = QV_DEVICE_CUDA;
  opts.cpu_threads = 2;
  qv_context_t* ctx = nullptr;
  EXPECT_EQ(qv_context_create(&opts, &ctx), QV_ERR_NO_DEVICE);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_STRNE(qv_last_error_message(), "");
  qv_context_free(ctx);
}

TEST(CapiContext, AutoWithoutGpuResolvesToCpu) {
  int32_t count = CudaDevices();
  ASSERT_GE(count, 0);
  if (count > 0) GTEST_SKIP() << "a CUDA device is present";
  qv_context_options_t opts;
  QV_ASSERT_OK(qv_context_options_init(&opts));
  opts.cpu_threads = 2;
  ASSERT_EQ(opts.device, QV_DEVICE_AUTO);
  qv_context_t* raw = nullptr;
  QV_ASSERT_OK(qv_context_create(&opts, &raw));
  Context ctx(raw);
  qv_device_kind_t kind = -5;
  int32_t id = 99;
  QV_ASSERT_OK(qv_context_device(ctx.get(), &kind, &id));
  EXPECT_EQ(kind, QV_DEVICE_CPU);
  EXPECT_EQ(id, -1);

  // An index on the AUTO context runs, and says it is on the CPU.
  Index idx = MakeIndex(ctx.get(), 3, QV_METRIC_L2);
  ASSERT_TRUE(idx) << qv_last_error_message();
  qv_index_info_t info;
  QV_ASSERT_OK(qv_index_info_init(&info));
  QV_ASSERT_OK(qv_index_info(idx.get(), &info));
  EXPECT_EQ(info.device, QV_DEVICE_CPU);
  EXPECT_EQ(info.device_id, -1);
}

TEST(CapiContext, CudaWithGpuResolvesToCuda) {
  int32_t count = CudaDevices();
  ASSERT_GE(count, 0);
  if (count == 0) GTEST_SKIP() << "no CUDA device";
  qv_context_options_t opts;
  QV_ASSERT_OK(qv_context_options_init(&opts));
  opts.device = QV_DEVICE_CUDA;
  qv_context_t* raw = nullptr;
  QV_ASSERT_OK(qv_context_create(&opts, &raw));
  Context ctx(raw);
  qv_device_kind_t kind = -5;
  int32_t id = 99;
  QV_ASSERT_OK(qv_context_device(ctx.get(), &kind, &id));
  EXPECT_EQ(kind, QV_DEVICE_CUDA);
  EXPECT_EQ(id, 0);
}

TEST(CapiContext, NullOptionsMeansDefaults) {
  qv_context_t* raw = nullptr;
  QV_ASSERT_OK(qv_context_create(nullptr, &raw));
  Context ctx(raw);
  ASSERT_NE(raw, nullptr);
  qv_device_kind_t kind = -5;
  QV_ASSERT_OK(qv_context_device(ctx.get(), &kind, nullptr));
  if (CudaDevices() == 0)
    EXPECT_EQ(kind, QV_DEVICE_CPU);
  else
    EXPECT_TRUE(kind == QV_DEVICE_CPU || kind == QV_DEVICE_CUDA);
}

TEST(CapiContext, BadArguments) {
  qv_context_options_t opts;
  QV_ASSERT_OK(qv_context_options_init(&opts));
  opts.device = QV_DEVICE_CPU;
  EXPECT_TRUE(FailsNaming(qv_context_create(&opts, nullptr), QV_ERR_INVALID_ARGUMENT, "out"));

  qv_context_t* ctx = nullptr;
  opts.device = 7;
  EXPECT_TRUE(FailsNaming(qv_context_create(&opts, &ctx), QV_ERR_INVALID_ARGUMENT, "device"));
  EXPECT_EQ(ctx, nullptr);
  opts.device = -1;
  EXPECT_TRUE(FailsNaming(qv_context_create(&opts, &ctx), QV_ERR_INVALID_ARGUMENT, "device"));
  EXPECT_EQ(ctx, nullptr);

  QV_ASSERT_OK(qv_context_options_init(&opts));
  opts.device = QV_DEVICE_CPU;
  opts.cpu_threads = -1;
  EXPECT_TRUE(FailsNaming(qv_context_create(&opts, &ctx), QV_ERR_INVALID_ARGUMENT, "cpu_threads"));
  EXPECT_EQ(ctx, nullptr);

  qv_device_kind_t kind;
  EXPECT_TRUE(
      FailsNaming(qv_context_device(nullptr, &kind, nullptr), QV_ERR_INVALID_ARGUMENT, "context"));
}

TEST(CapiContext, OlderOptionsStructIsAccepted) {
  // A caller compiled when the struct ended before cpu_threads: the library must not read it.
  qv_context_options_t opts;
  QV_ASSERT_OK(qv_context_options_init(&opts));
  opts.struct_size = static_cast<uint32_t>(offsetof(qv_context_options_t, cpu_threads));
  opts.device = QV_DEVICE_CPU;
  opts.cpu_threads = -12345;  // beyond struct_size: garbage the library must ignore
  qv_context_t* raw = nullptr;
  QV_ASSERT_OK(qv_context_create(&opts, &raw));
  Context ctx(raw);
  qv_device_kind_t kind = -5;
  QV_ASSERT_OK(qv_context_device(ctx.get(), &kind, nullptr));
  EXPECT_EQ(kind, QV_DEVICE_CPU);
}

TEST(CapiContext, TooSmallOptionsStructIsRejected) {
  for (uint32_t size : {0u, 1u, 3u}) {
    qv_context_options_t opts;
    QV_ASSERT_OK(qv_context_options_init(&opts));
    opts.struct_size = size;
    opts.device = QV_DEVICE_CPU;
    qv_context_t* ctx = nullptr;
    EXPECT_TRUE(FailsNamingAny(qv_context_create(&opts, &ctx), QV_ERR_INVALID_ARGUMENT,
                               {"options", "struct_size"}))
        << "struct_size " << size;
    EXPECT_EQ(ctx, nullptr);
    qv_context_free(ctx);
  }
}

TEST(CapiContext, FreeNullIsNoOp) {
  qv_context_free(nullptr);
  qv_index_free(nullptr);
  qv_range_result_free(nullptr);
  qv_buffer_free(nullptr);
  SUCCEED();
}

TEST(CapiContext, UsableFromManyThreads) {
  // Contexts are thread-safe: indexes are created and used on one context from several threads.
  Context ctx = MakeCpuContext(2);
  ASSERT_TRUE(ctx);
  const int64_t dim = 8, n = 50;
  std::vector<float> x = RandomVectors(n, dim, 7);
  std::vector<int> failures(6, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 5; ++rep) {
        qv_index_t* idx = nullptr;
        if (qv_index_create(ctx.get(), "Flat", dim, QV_METRIC_L2, &idx) != QV_OK) {
          ++failures[t];
          continue;
        }
        if (qv_index_add(idx, n, x.data(), nullptr) != QV_OK) ++failures[t];
        float d[3];
        int64_t ids[3];
        if (qv_index_search(idx, 1, &x[t * dim], 3, nullptr, d, ids) != QV_OK || ids[0] != t)
          ++failures[t];
        qv_index_free(idx);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 6; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

}  // namespace
