// cuda/core: Resources, the device memory pool, error mapping, the host/device copies, and the
// DeviceMatrix of gpu.h.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "cpp/core/error.h"
#include "cuda/core/error.h"
#include "cuda/core/memory_pool.h"
#include "cuda/core/resources.h"
#include "cuda/core/transfer.h"
#include "gpu_testing.h"

namespace quiver {

namespace testing {

namespace {

// Owns the shared Resources; gtest tears environments down before main returns.
class SharedResources : public ::testing::Environment {
 public:
  gpu::Resources& get() {
    if (!resources_) resources_ = gpu::make_resources(testing::test_resources_options());
    return *resources_;
  }
  void TearDown() override { resources_.reset(); }

 private:
  gpu::ResourcesPtr resources_;
};

SharedResources* const environment =
    static_cast<SharedResources*>(::testing::AddGlobalTestEnvironment(new SharedResources));

}  // namespace

gpu::Resources& shared_resources() { return environment->get(); }

}  // namespace testing

namespace {

using testing::DeviceArray;
using testing::shared_resources;

Status status_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.status();
  }
  return Status::ok;
}

TEST(GpuResources, RejectsAMissingDevice) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions options = testing::test_resources_options();
  options.device = gpu::device_count();
  EXPECT_EQ(status_of([&] { gpu::make_resources(options); }), Status::invalid_argument);
  // Nothing of the refusal stays behind for a later launch check on this thread to report.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  options.device = 0;
  options.tile_bytes = 100;
  EXPECT_EQ(status_of([&] { gpu::make_resources(options); }), Status::invalid_argument);
}

TEST(GpuResources, PoolReusesBlocks) {
  QV_REQUIRE_GPU();
  // Its own Resources: blocks other tests left cached in a shared pool could be handed out instead.
  const gpu::ResourcesPtr resources = gpu::make_resources(testing::test_resources_options());
  gpu::DevicePool& pool = resources->pool();
  void* a = pool.allocate(1000);
  void* b = pool.allocate(3 << 20);
  const int64_t allocations = pool.stats().device_allocations;
  pool.release(a);
  pool.release(b);
  void* c = pool.allocate(900);      // same 256-byte class as 1000
  void* d = pool.allocate(3 << 20);  // same 2 MiB class
  EXPECT_EQ(c, a);
  EXPECT_EQ(d, b);
  EXPECT_EQ(pool.stats().device_allocations, allocations);
  pool.release(c);
  pool.release(d);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 256, 0u);
}

TEST(GpuResources, OutOfMemoryIsAStatusNotACrash) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  gpu::Session session(resources);
  // 4 PiB: no device has it.
  EXPECT_EQ(status_of([&] { resources.pool().allocate(size_t(1) << 52); }), Status::out_of_device_memory);
  // The runtime is still healthy afterwards.
  void* p = resources.pool().allocate(4096);
  EXPECT_NE(p, nullptr);
  resources.pool().release(p);
  session.finish();
}

TEST(GpuResources, CudaErrorsCarryTheirMessage) {
  QV_REQUIRE_GPU();
  try {
    gpu::check_cuda(cudaErrorInvalidValue, "cudaMemcpy(test)", "/somewhere/cuda/core/x.cu", 12);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::cuda_error);
    const std::string message = e.what();
    EXPECT_NE(message.find("cudaErrorInvalidValue"), std::string::npos) << message;
    EXPECT_NE(message.find("cuda/core/x.cu:12"), std::string::npos) << message;
  }
  try {
    gpu::check_cuda(cudaErrorMemoryAllocation, "cudaMalloc(test)", __FILE__, __LINE__);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::out_of_device_memory);
  }
  try {
    gpu::check_cublas(CUBLAS_STATUS_INVALID_VALUE, "cublasSgemm(test)", __FILE__, __LINE__);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::cuda_error);
  }
}

TEST(GpuResources, CopiesEveryKindOfMemory) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  const int device = resources.device();
  // Larger than the staging buffers' chunks, odd-sized.
  const size_t count = (size_t(20) << 20) / sizeof(float) + 7;
  std::vector<float> host = testing::uniform_vectors(int64_t(count), 1, 5);
  DeviceArray<float> dev(count);
  float* pinned = nullptr;
  QV_ASSERT_CUDA(cudaMallocHost(&pinned, count * sizeof(float)));
  EXPECT_EQ(gpu::memory_kind(host.data(), device), gpu::MemoryKind::host_pageable);
  EXPECT_EQ(gpu::memory_kind(pinned, device), gpu::MemoryKind::host_pinned);
  EXPECT_EQ(gpu::memory_kind(dev.get(), device), gpu::MemoryKind::device);
  {
    gpu::Session session(resources);
    cudaStream_t stream = resources.stream(0);
    gpu::copy_to_device(resources.staging(), device, dev.get(), host.data(), count * sizeof(float), stream);
    gpu::copy_from_device(resources.staging(), device, pinned, dev.get(), count * sizeof(float), stream);
    session.finish();
  }
  EXPECT_EQ(std::memcmp(pinned, host.data(), count * sizeof(float)), 0);
  std::vector<float> back(count, -1.f);
  {
    gpu::Session session(resources);
    cudaStream_t stream = resources.stream(0);
    gpu::copy_to_device(resources.staging(), device, dev.get(), pinned, count * sizeof(float), stream);
    gpu::copy_from_device(resources.staging(), device, back.data(), dev.get(), count * sizeof(float), stream);
    session.finish();
  }
  EXPECT_EQ(back, host);
  cudaFreeHost(pinned);
}

// The suites' DeviceArray inputs reach the device before the work queued next on the Resources'
// streams, whatever device the thread keeps current. scripts/gpu.sh runs the suites on every
// device while the thread keeps device 0 current; a pageable copy may still be in flight when
// cudaMemcpy returns, and made with device 0 current it was not ordered before another device's
// streams. (Only a test device other than 0 can show it: QUIVER_TEST_DEVICE.)
TEST(GpuTestHelpers, DeviceArrayCopiesPrecedeTheResourcesStreams) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  // 64 MiB: several staging buffers, the last one's transfer in flight when cudaMemcpy returns.
  const size_t count = size_t(16) << 20;
  std::vector<int32_t> host(count);
  for (int32_t round = 0; round < 3; ++round) {
    for (size_t i = 0; i < count; ++i) host[i] = int32_t(i) * 3 + round;
    const DeviceArray<int32_t> source(host);
    DeviceArray<int32_t> copy(count);
    {
      gpu::Session session(resources);
      QV_ASSERT_CUDA(cudaMemcpyAsync(copy.get(), source.get(), count * sizeof(int32_t), cudaMemcpyDeviceToDevice,
                                     resources.stream(0)));
      session.finish();
    }
    ASSERT_EQ(copy.to_host(), host) << "round " << round;
  }
}

TEST(GpuDeviceMatrix, AppendsReadsAndRemoves) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  const int64_t dim = 37;
  auto matrix = gpu::make_matrix(resources, dim);
  EXPECT_EQ(gpu::matrix_rows(*matrix), 0);
  EXPECT_EQ(gpu::matrix_data(*matrix), nullptr);
  std::vector<float> all;
  // Host batches and a device batch, crossing the growth points.
  for (int64_t batch : {int64_t(5), int64_t(1500), int64_t(3)}) {
    auto x = testing::uniform_vectors(batch, dim, uint32_t(batch));
    gpu::matrix_append(resources, *matrix, batch, x.data());
    all.insert(all.end(), x.begin(), x.end());
  }
  {
    auto x = testing::uniform_vectors(700, dim, 99);
    DeviceArray<float> xd(x);
    gpu::matrix_append(resources, *matrix, 700, xd.get());
    all.insert(all.end(), x.begin(), x.end());
  }
  const int64_t rows = int64_t(all.size()) / dim;
  ASSERT_EQ(gpu::matrix_rows(*matrix), rows);
  std::vector<float> back(all.size());
  gpu::matrix_read(resources, *matrix, 0, rows, back.data());
  EXPECT_EQ(back, all);
  std::vector<float> norms(rows);
  QV_ASSERT_CUDA(cudaMemcpy(norms.data(), gpu::matrix_norms(*matrix), rows * sizeof(float), cudaMemcpyDeviceToHost));
  for (int64_t r = 0; r < rows; ++r) {
    double expect = 0;
    for (int64_t i = 0; i < dim; ++i) expect += double(all[r * dim + i]) * all[r * dim + i];
    ASSERT_NEAR(norms[r], expect, 1e-4 * expect + 1e-6) << "row " << r;
  }

  const std::vector<int64_t> removed = {0, 7, 8, 1504, rows - 1};
  gpu::matrix_remove_rows(resources, *matrix, int64_t(removed.size()), removed.data());
  std::vector<float> expect;
  std::vector<float> expect_norms;
  for (int64_t r = 0, i = 0; r < rows; ++r) {
    if (i < int64_t(removed.size()) && removed[i] == r) {
      ++i;
      continue;
    }
    expect.insert(expect.end(), all.begin() + r * dim, all.begin() + (r + 1) * dim);
    expect_norms.push_back(norms[r]);
  }
  const int64_t kept = rows - int64_t(removed.size());
  ASSERT_EQ(gpu::matrix_rows(*matrix), kept);
  back.assign(expect.size(), 0.f);
  gpu::matrix_read(resources, *matrix, 0, kept, back.data());
  EXPECT_EQ(back, expect);
  std::vector<float> kept_norms(kept);
  QV_ASSERT_CUDA(cudaMemcpy(kept_norms.data(), gpu::matrix_norms(*matrix), kept * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(kept_norms, expect_norms);

  // Bad removals change nothing.
  const std::vector<int64_t> unsorted = {5, 3};
  EXPECT_EQ(status_of([&] { gpu::matrix_remove_rows(resources, *matrix, 2, unsorted.data()); }),
            Status::invalid_argument);
  EXPECT_EQ(gpu::matrix_rows(*matrix), kept);
  EXPECT_GT(gpu::matrix_device_bytes(*matrix), kept * dim * int64_t(sizeof(float)));
}

}  // namespace
}  // namespace quiver
