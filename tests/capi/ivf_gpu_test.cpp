// Inverted-file indexes on a CUDA context, against the same indexes on the CPU: the same trained
// model gives the same results (up to ties), and indexes move between devices by save and load.
// Skipped without a CUDA device.
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

Context MakeCudaContext() {
  int32_t count = 0;
  if (qv_cuda_device_count(&count) != QV_OK || count == 0) return Context();
  qv_context_options_t opts;
  qv_context_options_init(&opts);
  opts.device = QV_DEVICE_CUDA;
  opts.device_id = TestCudaDevice(count);
  opts.cpu_threads = 2;
  qv_context_t* ctx = nullptr;
  if (qv_context_create(&opts, &ctx) != QV_OK) return Context();
  return Context(ctx);
}

std::vector<float> Blobs(int64_t n, int64_t dim, uint64_t seed) { return ClusteredVectors(n, dim, 30, 5, seed); }

Index Load(qv_context_t* ctx, const Buffer& data, size_t size) {
  qv_index_t* raw = nullptr;
  EXPECT_EQ(qv_index_load_buffer(ctx, data.get(), size, &raw), QV_OK) << qv_last_error_message();
  return Index(raw);
}

class CapiIvfGpu : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    gpu_ = MakeCudaContext();
    if (!gpu_) GTEST_SKIP() << "no CUDA device";
    cpu_ = MakeCpuContext(2);
  }
  Context gpu_, cpu_;
};

TEST_P(CapiIvfGpu, SameModelSameResultsOnBothDevices) {
  const char* descriptor = GetParam();
  const int64_t n = 20000, dim = 64, nq = 200, k = 10;
  const auto x = Blobs(n, dim, 1), q = Blobs(nq, dim, 2);
  // Train and fill on the GPU, then move a copy to the CPU: both hold the same model and codes.
  qv_index_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_create(gpu_.get(), descriptor, dim, QV_METRIC_L2, &raw));
  Index gpu(raw);
  QV_ASSERT_OK(qv_index_train(gpu.get(), n, x.data()));
  QV_ASSERT_OK(qv_index_add(gpu.get(), n, x.data(), nullptr));
  qv_index_info_t info;
  qv_index_info_init(&info);
  QV_ASSERT_OK(qv_index_info(gpu.get(), &info));
  EXPECT_EQ(info.device, QV_DEVICE_CUDA);
  EXPECT_EQ(info.count, n);
  EXPECT_GT(info.device_bytes, 0);
  void* data = nullptr;
  size_t size = 0;
  QV_ASSERT_OK(qv_index_save_buffer(gpu.get(), &data, &size));
  Buffer bytes(data);
  Index cpu = Load(cpu_.get(), bytes, size);
  ASSERT_TRUE(cpu);
  for (uint32_t nprobe : {1u, 8u, 64u}) {
    qv_search_params_t p;
    qv_search_params_init(&p);
    p.nprobe = nprobe;
    Results on_gpu, on_cpu;
    QV_ASSERT_OK(Search(gpu.get(), q, dim, k, &p, &on_gpu));
    QV_ASSERT_OK(Search(cpu.get(), q, dim, k, &p, &on_cpu));
    EXPECT_GE(IdOverlap(on_gpu, on_cpu, nq, k), 0.99) << descriptor << " nprobe " << nprobe;
  }
  // Back to the GPU: the file saved on the CPU loads there, and saves to the same bytes.
  void* again = nullptr;
  size_t again_size = 0;
  QV_ASSERT_OK(qv_index_save_buffer(cpu.get(), &again, &again_size));
  Buffer cpu_bytes(again);
  EXPECT_EQ(again_size, size);
  Index gpu_again = Load(gpu_.get(), cpu_bytes, again_size);
  ASSERT_TRUE(gpu_again);
  Results a, b;
  QV_ASSERT_OK(Search(gpu.get(), q, dim, k, nullptr, &a));
  QV_ASSERT_OK(Search(gpu_again.get(), q, dim, k, nullptr, &b));
  EXPECT_EQ(a.ids, b.ids);
}

TEST_P(CapiIvfGpu, RemoveFilterRangeAndBadNprobe) {
  const char* descriptor = GetParam();
  const int64_t n = 5000, dim = 32, nq = 50, k = 10;
  const auto x = Blobs(n, dim, 1), q = Blobs(nq, dim, 2);
  qv_index_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_create(gpu_.get(), descriptor, dim, QV_METRIC_L2, &raw));
  Index gpu(raw);
  Results r;
  EXPECT_EQ(Search(gpu.get(), q, dim, k, nullptr, &r), QV_ERR_NOT_TRAINED);
  QV_ASSERT_OK(qv_index_train(gpu.get(), n, x.data()));
  QV_ASSERT_OK(qv_index_add(gpu.get(), n, x.data(), nullptr));
  std::vector<int64_t> odd;
  for (int64_t id = 1; id < n; id += 2) odd.push_back(id);
  int64_t removed = 0;
  QV_ASSERT_OK(qv_index_remove(gpu.get(), static_cast<int64_t>(odd.size()), odd.data(), &removed));
  EXPECT_EQ(removed, n / 2);
  std::vector<uint8_t> bits((n + 7) / 8, 0);
  for (int64_t id = 0; id < n; id += 4) bits[id / 8] |= static_cast<uint8_t>(1u << (id % 8));
  qv_search_params_t p;
  qv_search_params_init(&p);
  p.nprobe = 16;
  p.filter = bits.data();
  p.filter_bits = n;
  QV_ASSERT_OK(Search(gpu.get(), q, dim, k, &p, &r));
  for (int64_t id : r.ids) EXPECT_TRUE(id >= 0 && id % 4 == 0) << id;
  qv_range_result_t* range = nullptr;
  QV_ASSERT_OK(qv_index_range_search(gpu.get(), nq, q.data(), r.distances[k - 1], &p, &range));
  RangeResult owned(range);
  p.filter = nullptr;
  p.filter_bits = 0;
  p.nprobe = 0;
  EXPECT_TRUE(FailsNaming(Search(gpu.get(), q, dim, k, &p, &r), QV_ERR_INVALID_ARGUMENT, "nprobe"));
  p.nprobe = 65;
  EXPECT_TRUE(FailsNaming(Search(gpu.get(), q, dim, k, &p, &r), QV_ERR_INVALID_ARGUMENT, "nprobe"));
}

INSTANTIATE_TEST_SUITE_P(Descriptors, CapiIvfGpu,
                         ::testing::Values("IVF64,Flat", "IVF64,PQ8", "OPQ8,IVF64,PQ8,Refine", "IVF64,PQ16,HostIds"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
