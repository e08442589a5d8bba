// Indexes over several devices ("Sharded<S>,<kind>", "Replicated<R>,<kind>" and their combination)
// through the C API: exact kinds against the float64 reference, approximate kinds against the same
// kind on one device, ids, removal, files that load on another device count, bad input. Every check
// runs on a CPU context (the parts are logical shards there) and, where a GPU is present, on a CUDA
// context of three logical devices sharing it and on every visible device.
#include <cmath>
#include <limits>
#include <thread>

#include "metric_space_checks.h"

namespace {

using namespace qvtest;

int32_t CudaDevices() {
  int32_t count = 0;
  return qv_cuda_device_count(&count) == QV_OK ? count : 0;
}

// The contexts every check runs on: CPU, and on a GPU machine three logical devices of the test GPU
// and all GPUs.
std::vector<std::pair<std::string, Context>> Contexts() {
  std::vector<std::pair<std::string, Context>> contexts;
  contexts.emplace_back("cpu", MakeCpuContext(2));
  const int32_t gpus = CudaDevices();
  if (gpus > 0) {
    const int32_t device = TestCudaDevice(gpus);
    contexts.emplace_back("3 logical devices", MakeDevicesContext({device, device, device}));
    if (gpus > 1) contexts.emplace_back("every device", MakeDevicesContext({}, QV_ALL_DEVICES));
  }
  return contexts;
}

Index Create(qv_context_t* ctx, const char* descriptor, int64_t dim, qv_metric_t metric) {
  qv_index_t* index = nullptr;
  const qv_status_t status = qv_index_create(ctx, descriptor, dim, metric, &index);
  EXPECT_EQ(status, QV_OK) << descriptor << ": " << Describe(status);
  return Index(index);
}

std::vector<int64_t> SpreadIds(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[i] = 7 * i + 3;
  return ids;
}

// Adds base in two uneven batches (so shards fill unevenly and are rebalanced) with ids.
void AddInTwo(qv_index_t* index, const std::vector<float>& base, const std::vector<int64_t>& ids, int64_t dim) {
  const int64_t n = static_cast<int64_t>(ids.size()), first = n * 2 / 3;
  QV_ASSERT_OK(qv_index_add(index, first, base.data(), ids.data()));
  QV_ASSERT_OK(qv_index_add(index, n - first, base.data() + first * dim, ids.data() + first));
}

Results SearchAll(const qv_index_t* index, const std::vector<float>& queries, int64_t dim, uint32_t k,
                  const qv_search_params_t* params = nullptr) {
  Results results;
  EXPECT_EQ(Search(index, queries, dim, k, params, &results), QV_OK) << qv_last_error_message();
  return results;
}

const char* const kExactComposites[] = {"Sharded4,Flat", "Sharded,Flat", "Replicated3,Flat", "Replicated2,Sharded3,Flat",
                                        "Replicated,Flat"};

TEST(MultiDevice, ExactCompositesMatchTheReference) {
  const int64_t n = 1003, dim = 37, nq = 29;
  const std::vector<float> base = RandomVectors(n, dim, 5), queries = RandomVectors(nq, dim, 6);
  const std::vector<int64_t> ids = SpreadIds(n);
  for (auto& [name, ctx] : Contexts()) {
    ASSERT_TRUE(ctx) << name;
    for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
      for (const char* descriptor : kExactComposites) {
        SCOPED_TRACE(name + " " + descriptor + " " + MetricName(metric));
        Index index = Create(ctx.get(), descriptor, dim, metric);
        ASSERT_TRUE(index);
        AddInTwo(index.get(), base, ids, dim);
        EXPECT_EQ(Count(index.get()), n);
        for (uint32_t k : {1u, 10u, static_cast<uint32_t>(n + 5)}) {
          const Results got = SearchAll(index.get(), queries, dim, k);
          EXPECT_TRUE(CheckKnn(metric, base, ids, dim, queries, k, got.distances, got.ids)) << "k " << k;
        }
      }
    }
  }
}

// One inverted list probed is an exact search, so sharded IVF-Flat can be checked against the
// reference too: on a GPU its shards' results are merged on a device (k beyond the shards' sizes
// gives missing entries to merge; repeated vectors give ties across shards).
TEST(MultiDevice, ShardedOneListIvfIsExact) {
  const int64_t n = 1003, dim = 37, nq = 29;
  std::vector<float> base = RandomVectors(n, dim, 15);
  std::copy_n(base.begin(), 100 * dim, base.begin() + 500 * dim);  // rows 500 .. 599 repeat 0 .. 99
  const std::vector<float> queries = RandomVectors(nq, dim, 16);
  const std::vector<int64_t> ids = SpreadIds(n);
  for (auto& [name, ctx] : Contexts()) {
    ASSERT_TRUE(ctx) << name;
    for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
      for (const char* descriptor : {"Sharded3,IVF1,Flat", "Sharded2,IVF1,Flat"}) {
        SCOPED_TRACE(name + " " + descriptor + " " + MetricName(metric));
        Index index = Create(ctx.get(), descriptor, dim, metric);
        ASSERT_TRUE(index);
        QV_ASSERT_OK(qv_index_train(index.get(), n, base.data()));
        AddInTwo(index.get(), base, ids, dim);
        for (uint32_t k : {1u, 10u, static_cast<uint32_t>(n + 5)}) {
          const Results got = SearchAll(index.get(), queries, dim, k);
          EXPECT_TRUE(CheckKnn(metric, base, ids, dim, queries, k, got.distances, got.ids)) << "k " << k;
        }
      }
    }
  }
}

TEST(MultiDevice, ShardedRangeSearchMatchesOneIndex) {
  const int64_t n = 811, dim = 19, nq = 13;
  const std::vector<float> base = ClusteredVectors(n, dim, 6, 2, 8), queries = ClusteredVectors(nq, dim, 6, 2, 9);
  const auto ref = VectorReference(QV_METRIC_L2, base, queries, dim);
  const std::vector<bool> all(static_cast<size_t>(n), true);
  for (auto& [name, ctx] : Contexts()) {
    for (const char* descriptor : {"Sharded3,Flat", "Replicated2,Sharded2,Flat", "Sharded2,IVF1,Flat"}) {
      SCOPED_TRACE(name + " " + descriptor);
      Index index = Create(ctx.get(), descriptor, dim, QV_METRIC_L2);
      ASSERT_TRUE(index);
      QV_ASSERT_OK(qv_index_train(index.get(), n, base.data()));
      QV_ASSERT_OK(qv_index_add(index.get(), n, base.data(), nullptr));
      for (float radius : {0.0f, 10.0f, 40.0f, 1e9f}) {
        qv_range_result_t* raw = nullptr;
        QV_ASSERT_OK(qv_index_range_search(index.get(), nq, queries.data(), radius, nullptr, &raw));
        RangeResult result(raw);
        EXPECT_TRUE(CheckMetricRange(ref, radius, 1e-3 * (1 + radius / 100), all, result.get())) << radius;
      }
      // The cap on hits per query holds over the merged result.
      qv_search_params_t params;
      QV_ASSERT_OK(qv_search_params_init(&params));
      params.max_range_results = 5;
      qv_range_result_t* raw = nullptr;
      EXPECT_EQ(qv_index_range_search(index.get(), nq, queries.data(), 1e9f, &params, &raw), QV_ERR_TOO_MANY_RESULTS);
      EXPECT_EQ(raw, nullptr);
    }
  }
}

TEST(MultiDevice, ApproximateCompositesMatchTheirSingleDeviceKind) {
  const int64_t n = 3001, dim = 24, nq = 50;
  const std::vector<float> base = ClusteredVectors(n, dim, 20, 4, 10), queries = ClusteredVectors(nq, dim, 20, 4, 11);
  for (auto& [name, ctx] : Contexts()) {
    for (const char* child : {"IVF16,Flat", "IVF16,PQ8"}) {
      SCOPED_TRACE(name + " " + child);
      Index single = Create(ctx.get(), child, dim, QV_METRIC_L2);
      QV_ASSERT_OK(qv_index_train(single.get(), n, base.data()));
      QV_ASSERT_OK(qv_index_add(single.get(), n, base.data(), nullptr));
      qv_search_params_t params;
      QV_ASSERT_OK(qv_search_params_init(&params));
      params.nprobe = 5;
      const Results want = SearchAll(single.get(), queries, dim, 10, &params);
      for (const std::string prefix : {"Sharded3,", "Replicated2,", "Replicated2,Sharded2,"}) {
        SCOPED_TRACE(prefix);
        Index index = Create(ctx.get(), (prefix + child).c_str(), dim, QV_METRIC_L2);
        QV_ASSERT_OK(qv_index_train(index.get(), n, base.data()));
        AddInTwo(index.get(), base, Iota(n), dim);
        // The parts share one trained model, so every probe and code is the single index's.
        const Results got = SearchAll(index.get(), queries, dim, 10, &params);
        EXPECT_GE(IdOverlap(got, want, nq, 10), 0.99);
        for (size_t i = 0; i < got.distances.size(); ++i)
          ASSERT_NEAR(got.distances[i], want.distances[i], 1e-3 * (1 + std::fabs(want.distances[i]))) << i;
      }
    }
  }
}

TEST(MultiDevice, ShardedGraphReachesHighRecall) {
  const int64_t n = 2000, dim = 16, nq = 40;
  const std::vector<float> base = ClusteredVectors(n, dim, 10, 12, 13), queries = ClusteredVectors(nq, dim, 10, 12, 14);
  auto ctx = MakeCpuContext(2);
  Index exact = Create(ctx.get(), "Flat", dim, QV_METRIC_L2);
  QV_ASSERT_OK(qv_index_add(exact.get(), n, base.data(), nullptr));
  const Results want = SearchAll(exact.get(), queries, dim, 10);
  for (auto& [name, context] : Contexts()) {
    SCOPED_TRACE(name);
    Index index = Create(context.get(), "Sharded2,Graph16", dim, QV_METRIC_L2);
    QV_ASSERT_OK(qv_index_add(index.get(), n, base.data(), nullptr));
    qv_search_params_t params;
    QV_ASSERT_OK(qv_search_params_init(&params));
    params.search_width = 64;
    EXPECT_GE(IdOverlap(SearchAll(index.get(), queries, dim, 10, &params), want, nq, 10), 0.95);
  }
}

TEST(MultiDevice, StringCompositesAreExact) {
  const int64_t n = 400, nq = 31;
  const StringSet base = RandomWords(n, 21), queries = QueryWords(base, nq, 22);
  const auto ref = EditReference(base, queries);
  const std::vector<bool> all(static_cast<size_t>(n), true);
  for (auto& [name, ctx] : Contexts()) {
    for (const char* descriptor : {"Sharded3,LC7", "Replicated2,Flat", "Replicated2,Sharded2,SSS0.5", "Routed3,LC7"}) {
      SCOPED_TRACE(name + " " + descriptor);
      Index index = Create(ctx.get(), descriptor, 0, QV_METRIC_EDIT);
      ASSERT_TRUE(index);
      QV_ASSERT_OK(qv_index_add_strings(index.get(), 250, base.offsets.data(), base.bytes.data(), nullptr));
      QV_ASSERT_OK(qv_index_add_strings(index.get(), n - 250, base.offsets.data() + 250, base.bytes.data(), nullptr));
      for (uint32_t k : {1u, 6u}) {
        std::vector<float> distances(static_cast<size_t>(nq * k));
        std::vector<int64_t> ids(static_cast<size_t>(nq * k));
        QV_ASSERT_OK(qv_index_search_strings(index.get(), nq, queries.offsets.data(), queries.bytes.data(), k, nullptr,
                                             distances.data(), ids.data()));
        EXPECT_TRUE(CheckMetricKnn(ref, k, 0.0, all, distances, ids)) << "k " << k;
      }
      qv_range_result_t* raw = nullptr;
      QV_ASSERT_OK(qv_index_range_search_strings(index.get(), nq, queries.offsets.data(), queries.bytes.data(), 2.0f,
                                                 nullptr, &raw));
      RangeResult result(raw);
      EXPECT_TRUE(CheckMetricRange(ref, 2.0, 0.0, all, result.get()));
    }
  }
}

// The 2-Stage List of Clusters: clusters placed on parts, queries routed to the parts their balls
// reach; exact like brute force, before and after later adds and removals, and after a reload.
TEST(MultiDevice, RoutedListOfClustersIsExact) {
  const int64_t n = 1500, dim = 10, nq = 40;
  std::vector<float> base = ClusteredVectors(n, dim, 12, 8, 60);
  const std::vector<float> queries = ClusteredVectors(nq, dim, 12, 8, 61);
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_L1}) {
    const auto ref = VectorReference(metric, base, queries, dim);
    std::vector<double> sample;
    for (const auto& row : ref) sample.insert(sample.end(), row.begin(), row.end());
    std::sort(sample.begin(), sample.end());
    const double tol = 1e-4 * (1.0 + sample.back());
    for (auto& [name, ctx] : Contexts()) {
      SCOPED_TRACE(name + " " + MetricName(metric));
      Index index = Create(ctx.get(), "Routed3,LC16", dim, metric);
      ASSERT_TRUE(index);
      // The first add places clusters; the second goes by the parts' covering balls.
      QV_ASSERT_OK(qv_index_add(index.get(), 1200, base.data(), nullptr));
      QV_ASSERT_OK(qv_index_add(index.get(), n - 1200, base.data() + 1200 * dim, nullptr));
      std::vector<bool> allowed(static_cast<size_t>(n), true);
      const int64_t gone[3] = {0, 700, 1499};
      QV_ASSERT_OK(qv_index_remove(index.get(), 3, gone, nullptr));
      for (int64_t id : gone) allowed[id] = false;
      void* data = nullptr;
      size_t size = 0;
      QV_ASSERT_OK(qv_index_save_buffer(index.get(), &data, &size));
      Buffer bytes(data);
      qv_index_t* raw = nullptr;
      QV_ASSERT_OK(qv_index_load_buffer(ctx.get(), data, size, &raw));
      Index loaded(raw);
      for (qv_index_t* searched : {index.get(), loaded.get()}) {
        for (double quantile : {0.0, 0.001, 0.01, 0.1}) {
          const float radius = static_cast<float>(sample[static_cast<size_t>(quantile * (sample.size() - 1))]);
          qv_range_result_t* result = nullptr;
          QV_ASSERT_OK(qv_index_range_search(searched, nq, queries.data(), radius, nullptr, &result));
          RangeResult owned(result);
          EXPECT_TRUE(CheckMetricRange(ref, radius, tol, allowed, owned.get())) << "radius " << radius;
        }
        std::vector<float> distances(static_cast<size_t>(nq * 7));
        std::vector<int64_t> ids(distances.size());
        QV_ASSERT_OK(qv_index_search(searched, nq, queries.data(), 7, nullptr, distances.data(), ids.data()));
        EXPECT_TRUE(CheckMetricKnn(ref, 7, tol, allowed, distances, ids));
      }
    }
  }
}

TEST(MultiDevice, IdsStayGlobalAcrossShards) {
  const int64_t n = 300, dim = 8;
  const std::vector<float> base = RandomVectors(n, dim, 30);
  for (auto& [name, ctx] : Contexts()) {
    for (const char* descriptor : {"Sharded3,Flat", "Replicated2,Flat"}) {
      SCOPED_TRACE(name + " " + descriptor);
      Index index = Create(ctx.get(), descriptor, dim, QV_METRIC_L2);
      const std::vector<int64_t> ids = SpreadIds(n);
      QV_ASSERT_OK(qv_index_add(index.get(), n, base.data(), ids.data()));
      // An id held by any shard is refused, and nothing is added.
      const int64_t taken[2] = {1000000, ids[n - 1]};
      EXPECT_TRUE(FailsNaming(qv_index_add(index.get(), 2, base.data(), taken), QV_ERR_INVALID_ARGUMENT, "ids"));
      EXPECT_EQ(Count(index.get()), n);
      // Ids left to the index follow the largest held.
      QV_ASSERT_OK(qv_index_add(index.get(), 2, base.data(), nullptr));
      Results first = SearchAll(index.get(), std::vector<float>(base.begin(), base.begin() + dim), dim, 3);
      const int64_t next = ids[n - 1] + 1;
      EXPECT_TRUE((first.ids[0] == ids[0] || first.ids[0] == next) && (first.ids[1] == ids[0] || first.ids[1] == next));
      // Removal finds ids wherever they are.
      const std::vector<int64_t> gone = {ids[0], ids[1], ids[2], next, 424242};
      int64_t removed = -1;
      QV_ASSERT_OK(qv_index_remove(index.get(), static_cast<int64_t>(gone.size()), gone.data(), &removed));
      EXPECT_EQ(removed, 4);
      EXPECT_EQ(Count(index.get()), n + 2 - 4);
      const Results after = SearchAll(index.get(), std::vector<float>(base.begin(), base.begin() + 3 * dim), dim, 5);
      for (int64_t id : after.ids) EXPECT_TRUE(id != ids[0] && id != ids[1] && id != ids[2] && id != next) << id;
      // A removed id may come back.
      QV_ASSERT_OK(qv_index_add(index.get(), 1, base.data(), &ids[0]));
      EXPECT_EQ(Count(index.get()), n - 1);
    }
  }
}

TEST(MultiDevice, TrainingIsSharedAndGuarded) {
  const int64_t n = 600, dim = 12;
  const std::vector<float> base = ClusteredVectors(n, dim, 8, 5, 31);
  for (auto& [name, ctx] : Contexts()) {
    SCOPED_TRACE(name);
    Index index = Create(ctx.get(), "Sharded3,IVF8,Flat", dim, QV_METRIC_L2);
    Results unused;
    EXPECT_EQ(Search(index.get(), std::vector<float>(base.begin(), base.begin() + dim), dim, 1, nullptr, &unused),
              QV_ERR_NOT_TRAINED);
    EXPECT_EQ(qv_index_add(index.get(), n, base.data(), nullptr), QV_ERR_NOT_TRAINED);
    QV_ASSERT_OK(qv_index_train(index.get(), n, base.data()));
    QV_ASSERT_OK(qv_index_add(index.get(), n, base.data(), nullptr));
    EXPECT_EQ(qv_index_train(index.get(), n, base.data()), QV_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(Count(index.get()), n);
    // A kind without a model ignores training, with data or without, as on one device.
    Index flat = Create(ctx.get(), "Sharded3,Flat", dim, QV_METRIC_L2);
    QV_ASSERT_OK(qv_index_add(flat.get(), n, base.data(), nullptr));
    QV_EXPECT_OK(qv_index_train(flat.get(), n, base.data()));
    EXPECT_EQ(Count(flat.get()), n);
  }
}

TEST(MultiDevice, FilesLoadOnAnyDeviceCount) {
  const int64_t n = 900, dim = 20, nq = 17;
  const std::vector<float> base = ClusteredVectors(n, dim, 12, 6, 40), queries = ClusteredVectors(nq, dim, 12, 6, 41);
  auto cpu = MakeCpuContext(2);
  for (auto& [name, ctx] : Contexts()) {
    for (const char* descriptor : {"Sharded4,IVF12,Flat", "Replicated2,Flat", "Sharded,Flat", "Replicated2,Sharded2,Graph8"}) {
      SCOPED_TRACE(name + " " + descriptor);
      Index index = Create(ctx.get(), descriptor, dim, QV_METRIC_L2);
      QV_ASSERT_OK(qv_index_train(index.get(), n, base.data()));
      AddInTwo(index.get(), base, SpreadIds(n), dim);
      const int64_t gone = 3;
      QV_ASSERT_OK(qv_index_remove(index.get(), 1, &gone, nullptr));
      const Results want = SearchAll(index.get(), queries, dim, 7);
      void* data = nullptr;
      size_t size = 0;
      QV_ASSERT_OK(qv_index_save_buffer(index.get(), &data, &size));
      Buffer bytes(data);
      // On the same devices and on one CPU device: the same results, and the same ids follow.
      for (qv_context_t* target : {ctx.get(), cpu.get()}) {
        qv_index_t* raw = nullptr;
        QV_ASSERT_OK(qv_index_load_buffer(target, data, size, &raw));
        Index loaded(raw);
        EXPECT_EQ(Count(loaded.get()), n - 1);
        const Results got = SearchAll(loaded.get(), queries, dim, 7);
        EXPECT_GE(IdOverlap(got, want, nq, 7), 0.99);
        QV_ASSERT_OK(qv_index_add(loaded.get(), 1, base.data(), nullptr));
        const Results top = SearchAll(loaded.get(), std::vector<float>(base.begin(), base.begin() + dim), dim, 2);
        EXPECT_TRUE(top.ids[0] == 7 * (n - 1) + 4 || top.ids[1] == 7 * (n - 1) + 4);
      }
      // A damaged file is refused.
      static_cast<uint8_t*>(data)[size / 2] ^= 0x40;
      qv_index_t* raw = nullptr;
      EXPECT_EQ(qv_index_load_buffer(ctx.get(), data, size, &raw), QV_ERR_CORRUPT_DATA);
    }
  }
}

TEST(MultiDevice, ReplicasServeConcurrentCallers) {
  const int64_t n = 2000, dim = 32, nq = 64;
  const std::vector<float> base = RandomVectors(n, dim, 50), queries = RandomVectors(nq, dim, 51);
  for (auto& [name, ctx] : Contexts()) {
    SCOPED_TRACE(name);
    Index index = Create(ctx.get(), "Replicated3,Flat", dim, QV_METRIC_L2);
    QV_ASSERT_OK(qv_index_add(index.get(), n, base.data(), nullptr));
    const Results want = SearchAll(index.get(), queries, dim, 5);
    std::vector<std::thread> threads;
    std::vector<int> mismatches(6, 0);
    for (int t = 0; t < 6; ++t) {
      threads.emplace_back([&, t] {
        for (int64_t q = t; q < nq; q += 6) {
          std::vector<float> distances(5);
          std::vector<int64_t> ids(5);
          if (qv_index_search(index.get(), 1, &queries[q * dim], 5, nullptr, distances.data(), ids.data()) != QV_OK ||
              !std::equal(ids.begin(), ids.end(), want.ids.begin() + q * 5))
            ++mismatches[t];
        }
      });
    }
    for (auto& thread : threads) thread.join();
    for (int t = 0; t < 6; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  }
}

// Whether two range results hold the same hits for every query (ids and distances, in order).
::testing::AssertionResult SameRangeHits(const qv_range_result_t* want, const qv_range_result_t* got) {
  int64_t nq_want = 0, nq_got = 0;
  const int64_t *lims_want = nullptr, *lims_got = nullptr, *ids_want = nullptr, *ids_got = nullptr;
  const float *d_want = nullptr, *d_got = nullptr;
  if (qv_range_result_get(want, &nq_want, &lims_want, &ids_want, &d_want) != QV_OK ||
      qv_range_result_get(got, &nq_got, &lims_got, &ids_got, &d_got) != QV_OK)
    return ::testing::AssertionFailure() << "qv_range_result_get failed";
  if (nq_want != nq_got) return ::testing::AssertionFailure() << "nq " << nq_got << " != " << nq_want;
  for (int64_t q = 0; q <= nq_want; ++q)
    if (lims_want[q] != lims_got[q]) return ::testing::AssertionFailure() << "lims differ at query " << q;
  for (int64_t i = 0; i < lims_want[nq_want]; ++i)
    if (ids_want[i] != ids_got[i] || d_want[i] != d_got[i])
      return ::testing::AssertionFailure() << "hit " << i << ": id " << ids_got[i] << " != " << ids_want[i];
  return ::testing::AssertionSuccess();
}

// A replicated index checks (and for cosine normalises) each replica's slice of the queries on that
// replica's thread, for k-NN and range searches: the answers are the plain kind's, and a bad row in
// any slice fails the call naming its row in the caller's batch, the index still usable.
TEST(MultiDevice, ReplicasCheckTheirOwnSlicesOfTheQueries) {
  const int64_t n = 1500, dim = 16, nq = 50;
  const std::vector<float> base = RandomVectors(n, dim, 60), queries = RandomVectors(nq, dim, 61);
  for (auto& [name, ctx] : Contexts()) {
    for (const qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_COSINE}) {
      SCOPED_TRACE(name + (metric == QV_METRIC_L2 ? " l2" : " cosine"));
      Index single = Create(ctx.get(), "Flat", dim, metric);
      QV_ASSERT_OK(qv_index_add(single.get(), n, base.data(), nullptr));
      const Results want = SearchAll(single.get(), queries, dim, 7);
      for (const char* descriptor : {"Replicated3,Flat", "Replicated2,Sharded2,Flat"}) {
        SCOPED_TRACE(descriptor);
        Index index = Create(ctx.get(), descriptor, dim, metric);
        QV_ASSERT_OK(qv_index_add(index.get(), n, base.data(), nullptr));
        const Results got = SearchAll(index.get(), queries, dim, 7);
        EXPECT_EQ(got.ids, want.ids);
        std::vector<float> bad = queries;
        bad[41 * dim + 3] = std::nanf("");  // in the last replica's slice
        Results out;
        EXPECT_TRUE(FailsNaming(Search(index.get(), bad, dim, 7, nullptr, &out), QV_ERR_INVALID_ARGUMENT, "41"));
        qv_range_result_t* raw = nullptr;
        EXPECT_TRUE(FailsNaming(qv_index_range_search(index.get(), nq, bad.data(), 1.0f, nullptr, &raw),
                                QV_ERR_INVALID_ARGUMENT, "41"));
        EXPECT_EQ(raw, nullptr);
        if (metric == QV_METRIC_COSINE) {
          bad = queries;
          std::fill(bad.begin() + 20 * dim, bad.begin() + 21 * dim, 0.0f);  // no direction
          EXPECT_TRUE(FailsNaming(Search(index.get(), bad, dim, 7, nullptr, &out), QV_ERR_INVALID_ARGUMENT, "20"));
        }
        EXPECT_EQ(SearchAll(index.get(), queries, dim, 7).ids, want.ids);
        // Range searches: the plain kind's hits, query by query.
        const float radius = want.distances[3];  // query 0's fourth neighbour: a few hits a query
        qv_range_result_t* single_raw = nullptr;
        QV_ASSERT_OK(qv_index_range_search(single.get(), nq, queries.data(), radius, nullptr, &single_raw));
        RangeResult single_hits(single_raw);
        QV_ASSERT_OK(qv_index_range_search(index.get(), nq, queries.data(), radius, nullptr, &raw));
        RangeResult hits(raw);
        int64_t hit_nq = 0;
        const int64_t* lims = nullptr;
        const int64_t* hit_ids = nullptr;
        const float* hit_distances = nullptr;
        QV_ASSERT_OK(qv_range_result_get(hits.get(), &hit_nq, &lims, &hit_ids, &hit_distances));
        EXPECT_GT(lims[hit_nq], nq) << "too few hits to compare";
        EXPECT_TRUE(SameRangeHits(single_hits.get(), hits.get()));
      }
    }
  }
}

// Inverted files, plain and replicated: the first bad query row is named whichever slice or tile
// holds it (GPU inverted files check host queries while they search), and the index searches on.
TEST(MultiDevice, InvertedFileSearchesNameTheFirstBadQueryRow) {
  const int64_t n = 1500, dim = 16, nq = 50;
  const std::vector<float> base = RandomVectors(n, dim, 62), queries = RandomVectors(nq, dim, 63);
  for (auto& [name, ctx] : Contexts()) {
    for (const qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT}) {
      for (const char* descriptor : {"IVF8,Flat", "Replicated3,IVF8,Flat", "IVF8,PQ4"}) {
        SCOPED_TRACE(name + " " + descriptor + " " + MetricName(metric));
        Index index = Create(ctx.get(), descriptor, dim, metric);
        QV_ASSERT_OK(qv_index_train(index.get(), n, base.data()));
        QV_ASSERT_OK(qv_index_add(index.get(), n, base.data(), nullptr));
        const Results want = SearchAll(index.get(), queries, dim, 7);
        std::vector<float> bad = queries;
        bad[41 * dim + 3] = std::numeric_limits<float>::infinity();
        Results out;
        EXPECT_TRUE(FailsNaming(Search(index.get(), bad, dim, 7, nullptr, &out), QV_ERR_INVALID_ARGUMENT, "row 41"));
        bad[12 * dim] = std::nanf("");  // the first of two
        EXPECT_TRUE(FailsNaming(Search(index.get(), bad, dim, 7, nullptr, &out), QV_ERR_INVALID_ARGUMENT, "row 12"));
        EXPECT_EQ(SearchAll(index.get(), queries, dim, 7).ids, want.ids);
      }
    }
  }
}

TEST(MultiDevice, BadDescriptorsAreRefused) {
  auto ctx = MakeCpuContext(1);
  for (const char* descriptor : {"Sharded0,Flat", "Sharded65,Flat", "Sharded,", "Sharded", "Shardedx,Flat",
                                 "Sharded2,Replicated,Flat", "Replicated,Sharded,Flat", "Sharded2,Bogus",
                                 "Replicated2,Sharded2,Sharded2,Flat", "Sharded2,Sharded2,Flat", "Routed2,Flat",
                                 "Routed2,SSS0.5", "Replicated,Routed2,LC4", "Routed2,Sharded2,LC4"}) {
    qv_index_t* index = nullptr;
    EXPECT_TRUE(FailsNaming(qv_index_create(ctx.get(), descriptor, 8, QV_METRIC_L2, &index), QV_ERR_INVALID_ARGUMENT,
                            "descriptor"))
        << descriptor;
    EXPECT_EQ(index, nullptr);
  }
}

TEST(MultiDeviceContext, DeviceListsAreChecked) {
  qv_context_options_t opts;
  QV_ASSERT_OK(qv_context_options_init(&opts));
  EXPECT_EQ(opts.device_count, 0);
  qv_context_t* ctx = nullptr;
  opts.device = QV_DEVICE_CPU;
  opts.device_count = 2;
  EXPECT_TRUE(FailsNaming(qv_context_create(&opts, &ctx), QV_ERR_INVALID_ARGUMENT, "device_ids"));
  opts.device = QV_DEVICE_AUTO;
  for (int32_t bad : {QV_MAX_DEVICES + 1, -2}) {
    opts.device_count = bad;
    EXPECT_TRUE(FailsNaming(qv_context_create(&opts, &ctx), QV_ERR_INVALID_ARGUMENT, "device_count"));
  }
  opts.device_count = 2;
  opts.device_ids[0] = 0;
  opts.device_ids[1] = -1;
  EXPECT_TRUE(FailsNaming(qv_context_create(&opts, &ctx), QV_ERR_INVALID_ARGUMENT, "device_ids"));
  // -1 in the list is a bad ordinal, not QV_ALL_DEVICES.
  opts.device_count = 1;
  opts.device_ids[0] = -1;
  EXPECT_TRUE(FailsNaming(qv_context_create(&opts, &ctx), QV_ERR_INVALID_ARGUMENT, "device_ids"));
  opts.device_count = 2;
  opts.device_ids[0] = 0;
  // A device that does not exist: no device for CUDA, the CPU for AUTO.
  opts.device_ids[1] = 999;
  opts.device = QV_DEVICE_CUDA;
  EXPECT_EQ(qv_context_create(&opts, &ctx), QV_ERR_NO_DEVICE);
  opts.device = QV_DEVICE_AUTO;
  QV_ASSERT_OK(qv_context_create(&opts, &ctx));
  Context fallback(ctx);
  int32_t count = -1;
  QV_ASSERT_OK(qv_context_devices(fallback.get(), nullptr, 0, &count));
  EXPECT_EQ(count, 0);
  qv_device_kind_t kind;
  QV_ASSERT_OK(qv_context_device(fallback.get(), &kind, nullptr));
  EXPECT_EQ(kind, QV_DEVICE_CPU);
  EXPECT_TRUE(FailsNaming(qv_context_devices(fallback.get(), nullptr, 1, &count), QV_ERR_INVALID_ARGUMENT, "device_ids"));
  EXPECT_TRUE(FailsNaming(qv_context_devices(fallback.get(), nullptr, -1, &count), QV_ERR_INVALID_ARGUMENT, "capacity"));
  EXPECT_TRUE(FailsNaming(qv_context_devices(nullptr, nullptr, 0, &count), QV_ERR_INVALID_ARGUMENT, "context"));
}

TEST(MultiDeviceContext, ListsItsDevices) {
  const int32_t gpus = CudaDevices();
  if (gpus == 0) GTEST_SKIP() << "no CUDA device";
  const int32_t device = TestCudaDevice(gpus);
  Context ctx = MakeDevicesContext({device, device});
  ASSERT_TRUE(ctx) << qv_last_error_message();
  int32_t ids[4] = {-5, -5, -5, -5}, count = 0;
  QV_ASSERT_OK(qv_context_devices(ctx.get(), ids, 4, &count));
  EXPECT_EQ(count, 2);
  EXPECT_EQ(ids[0], device);
  EXPECT_EQ(ids[1], device);
  EXPECT_EQ(ids[2], -5);
  Context all = MakeDevicesContext({}, QV_ALL_DEVICES);
  QV_ASSERT_OK(qv_context_devices(all.get(), ids, 1, &count));
  EXPECT_EQ(count, gpus);
  EXPECT_EQ(ids[0], 0);
}

}  // namespace
