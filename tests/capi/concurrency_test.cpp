// Concurrent read-only calls on one index (search, range search, info, save) from 20 threads give
// the same results as one thread, for the main kinds, on the CPU and (where there is one) the GPU;
// scripts/test.sh runs them under ThreadSanitizer too.
#include <atomic>
#include <thread>
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

struct Range {
  std::vector<int64_t> lims, ids;
  std::vector<float> distances;
  bool operator==(const Range& o) const {
    return lims == o.lims && ids == o.ids && distances == o.distances;
  }
};

qv_status_t RangeSearch(const qv_index_t* idx, const std::vector<float>& q, int64_t dim,
                        float radius, Range* out) {
  const int64_t nq = static_cast<int64_t>(q.size()) / dim;
  qv_range_result_t* raw = nullptr;
  qv_status_t s = qv_index_range_search(idx, nq, q.data(), radius, nullptr, &raw);
  if (s != QV_OK) return s;
  RangeResult r(raw);
  const int64_t *lims, *ids;
  const float* d;
  s = qv_range_result_get(r.get(), nullptr, &lims, &ids, &d);
  if (s != QV_OK) return s;
  out->lims.assign(lims, lims + nq + 1);
  out->ids.assign(ids, ids + lims[nq]);
  out->distances.assign(d, d + lims[nq]);
  return QV_OK;
}

class CapiConcurrency : public ::testing::TestWithParam<qv_metric_t> {};

// 16 threads search one index (k-NN at three k, range search) while 4 more call the read-only
// functions (info, save to a buffer), all at once: every answer equals what one thread got before.
void CheckConcurrentReaders(qv_context_t* ctx, const char* descriptor, qv_metric_t metric) {
  SCOPED_TRACE(descriptor);
  const int64_t dim = 24, n = 2000;
  Index idx = MakeIndex(ctx, dim, metric, descriptor);
  ASSERT_TRUE(idx) << qv_last_error_message();
  std::vector<float> x = RandomVectors(n, dim, 901);
  QV_ASSERT_OK(qv_index_train(idx.get(), n, x.data()));
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));

  // Each searcher has its own query set; the expected answers are computed first, on this thread.
  const int kSearchers = 16, kReaders = 4, kRounds = 4;
  const uint32_t ks[] = {1, 16, 300};
  const float radius = metric == QV_METRIC_L2 ? 20.0f : (metric == QV_METRIC_COSINE ? 0.4f : 6.0f);
  std::vector<std::vector<float>> queries(kSearchers);
  std::vector<std::vector<Results>> expected(kSearchers);
  std::vector<Range> expected_range(kSearchers);
  for (int t = 0; t < kSearchers; ++t) {
    queries[t] = RandomVectors(16, dim, 910 + t);
    for (uint32_t k : ks) {
      Results r;
      QV_ASSERT_OK(Search(idx.get(), queries[t], dim, k, nullptr, &r));
      expected[t].push_back(r);
    }
    QV_ASSERT_OK(RangeSearch(idx.get(), queries[t], dim, radius, &expected_range[t]));
  }
  void* data = nullptr;
  size_t size = 0;
  QV_ASSERT_OK(qv_index_save_buffer(idx.get(), &data, &size));
  Buffer saved(data);
  const std::vector<uint8_t> expected_bytes(static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);

  std::atomic<int> go{0};
  std::vector<std::string> failures(kSearchers + kReaders);
  std::vector<std::thread> threads;
  for (int t = 0; t < kSearchers; ++t) {
    threads.emplace_back([&, t] {
      while (go.load() == 0) std::this_thread::yield();  // start together
      for (int round = 0; round < kRounds && failures[t].empty(); ++round) {
        for (size_t ki = 0; ki < 3; ++ki) {
          Results r;
          qv_status_t s = Search(idx.get(), queries[t], dim, ks[ki], nullptr, &r);
          if (s != QV_OK)
            failures[t] = "search: " + Describe(s);
          else if (!(r == expected[t][ki]))
            failures[t] = "search k " + std::to_string(ks[ki]) + " differs";
        }
        Range rr;
        qv_status_t s = RangeSearch(idx.get(), queries[t], dim, radius, &rr);
        if (s != QV_OK)
          failures[t] = "range search: " + Describe(s);
        else if (!(rr == expected_range[t]))
          failures[t] = "range search differs";
      }
    });
  }
  for (int t = kSearchers; t < kSearchers + kReaders; ++t) {
    threads.emplace_back([&, t] {
      while (go.load() == 0) std::this_thread::yield();
      for (int round = 0; round < 3 * kRounds && failures[t].empty(); ++round) {
        qv_index_info_t info;
        qv_index_info_init(&info);
        if (qv_index_info(idx.get(), &info) != QV_OK || info.count != n) failures[t] = "info";
        void* d = nullptr;
        size_t sz = 0;
        const qv_status_t s = qv_index_save_buffer(idx.get(), &d, &sz);
        Buffer b(d);
        if (s != QV_OK)
          failures[t] = "save_buffer: " + Describe(s);
        else if (sz != expected_bytes.size() || std::memcmp(d, expected_bytes.data(), sz) != 0)
          failures[t] = "save_buffer differs";
      }
    });
  }
  go.store(1);
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < failures.size(); ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

const char* const kConcurrentKinds[] = {"Flat", "IVF16,Flat", "IVF16,PQ4", "Graph16", "Sharded3,Flat",
                                        "Replicated2,IVF16,Flat"};

TEST_P(CapiConcurrency, TwentyThreadsReadOneCpuIndex) {
  Context ctx = MakeCpuContext(2);
  ASSERT_TRUE(ctx);
  for (const char* descriptor : kConcurrentKinds) CheckConcurrentReaders(ctx.get(), descriptor, GetParam());
}

TEST_P(CapiConcurrency, TwentyThreadsReadOneGpuIndex) {
  int32_t gpus = 0;
  if (qv_cuda_device_count(&gpus) != QV_OK || gpus == 0) GTEST_SKIP() << "no CUDA device";
  Context ctx = MakeCudaContext(TestCudaDevice(gpus));
  ASSERT_TRUE(ctx);
  for (const char* descriptor : kConcurrentKinds) CheckConcurrentReaders(ctx.get(), descriptor, GetParam());
}

TEST_P(CapiConcurrency, ErrorsOnOneThreadDoNotLeak) {
  // Threads alternating failing and succeeding searches each see only their own message.
  const qv_metric_t metric = GetParam();
  Context ctx = MakeCpuContext(2);
  ASSERT_TRUE(ctx);
  const int64_t dim = 4;
  Index idx = MakeIndex(ctx.get(), dim, metric);
  ASSERT_TRUE(idx);
  std::vector<float> x = RandomVectors(30, dim, 921);
  QV_ASSERT_OK(qv_index_add(idx.get(), 30, x.data(), nullptr));
  std::vector<std::string> failures(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      float d[5];
      int64_t ids[5];
      for (int round = 0; round < 200; ++round) {
        bool fail = (round + t) % 2 == 0;
        qv_status_t s = qv_index_search(idx.get(), 1, x.data(), fail ? 0 : 5, nullptr, d, ids);
        const std::string msg = qv_last_error_message();
        if (fail && (s != QV_ERR_INVALID_ARGUMENT || msg.empty()))
          failures[t] = "failure not reported";
        if (!fail && (s != QV_OK || !msg.empty())) failures[t] = "success shows a message: " + msg;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

INSTANTIATE_TEST_SUITE_P(Metrics, CapiConcurrency,
                         ::testing::Values(QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE),
                         [](const ::testing::TestParamInfo<qv_metric_t>& info) {
                           return std::string(MetricName(info.param));
                         });

}  // namespace
