// gpu::merge_knn (cuda/multi/): parts' k-NN lists merged on a GPU, against the host merge
// (cpp/multi/merge_results.h) on lists with ties within and across parts, short rows (missing
// entries), either metric direction and k from 1 to the largest; parts on the test device and, where
// there are several GPUs, on another device too.
#include <chrono>
#include <functional>
#include <numeric>
#include <thread>

#include "cpp/backend/gpu_multi.h"
#include "cpp/core/error.h"
#include "cpp/core/thread_pool.h"
#include "cpp/multi/merge_results.h"
#include "cpp/multi/pipelined_merge.h"
#include "gpu_testing.h"

namespace quiver::testing {
namespace {

// `parts` lists of nq x k, each row sorted closest first (equal distances by id): distances from 8
// values (many ties), ids distinct within a query across all parts, a quarter of the rows short.
std::vector<PartResult> random_lists(int64_t parts, int64_t nq, int64_t k, Metric metric, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const bool larger_closer = larger_is_closer(metric);
  std::vector<PartResult> lists(static_cast<size_t>(parts));
  std::vector<int64_t> slots(static_cast<size_t>(2 * k));
  for (int64_t p = 0; p < parts; ++p) {
    PartResult& list = lists[p];
    list.distances.assign(static_cast<size_t>(nq * k), missing_distance(metric));
    list.ids.assign(static_cast<size_t>(nq * k), -1);
    for (int64_t q = 0; q < nq; ++q) {
      const int64_t present = rng() % 4 == 0 ? static_cast<int64_t>(rng() % (k + 1)) : k;
      std::iota(slots.begin(), slots.end(), 0);
      std::shuffle(slots.begin(), slots.end(), rng);
      std::vector<std::pair<float, int64_t>> row;
      for (int64_t j = 0; j < present; ++j) row.emplace_back(static_cast<float>(rng() % 8) - 3.0f, slots[j] * parts + p);
      std::sort(row.begin(), row.end(), [&](const auto& a, const auto& b) {
        if (a.first != b.first) return larger_closer ? a.first > b.first : a.first < b.first;
        return a.second < b.second;
      });
      for (int64_t j = 0; j < present; ++j) {
        list.distances[q * k + j] = row[j].first;
        list.ids[q * k + j] = row[j].second;
      }
    }
  }
  return lists;
}

struct Merged {
  std::vector<float> distances;
  std::vector<int64_t> ids;
};

Merged merge_on_host(Metric metric, int64_t nq, int64_t k, const std::vector<PartResult>& lists) {
  Merged m{std::vector<float>(static_cast<size_t>(nq * k)), std::vector<int64_t>(static_cast<size_t>(nq * k))};
  ThreadPool pool(2);
  merge_knn(pool, metric, nq, k, lists.data(), static_cast<int64_t>(lists.size()), m.distances.data(), m.ids.data());
  return m;
}

// Each list in a result buffer of resources[p % resources.size()].
struct Uploaded {
  std::vector<gpu::ResultBufferPtr> buffers;
  std::vector<const gpu::ResultBuffer*> parts;
};

Uploaded upload(const std::vector<gpu::Resources*>& resources, int64_t nq, int64_t k,
                const std::vector<PartResult>& lists) {
  Uploaded u;
  for (size_t p = 0; p < lists.size(); ++p) {
    gpu::Resources& r = *resources[p % resources.size()];
    u.buffers.push_back(gpu::make_result_buffer(r, nq * k));
    gpu::copy_memory(r, gpu::result_distances(*u.buffers.back()), lists[p].distances.data(), nq * k * 4);
    gpu::copy_memory(r, gpu::result_ids(*u.buffers.back()), lists[p].ids.data(), nq * k * 8);
    u.parts.push_back(u.buffers.back().get());
  }
  return u;
}

// Another device than the test's: the test device itself on a machine of one GPU.
int another_ordinal() { return gpu::device_count() - 1 == test_device() ? 0 : gpu::device_count() - 1; }

gpu::ResourcesPtr resources_on(int ordinal) {
  gpu::ResourcesOptions options;
  options.device = ordinal;
  return gpu::make_resources(options);
}

gpu::ResourcesPtr another_device() { return resources_on(another_ordinal()); }

// Each list uploaded to a result buffer of resources[p % resources.size()], merged on the first.
Merged merge_on_device(const std::vector<gpu::Resources*>& resources, Metric metric, int64_t nq, int64_t k,
                       const std::vector<PartResult>& lists, bool device_outputs = false) {
  const Uploaded uploaded = upload(resources, nq, k, lists);
  const std::vector<const gpu::ResultBuffer*>& parts = uploaded.parts;
  Merged m{std::vector<float>(static_cast<size_t>(nq * k)), std::vector<int64_t>(static_cast<size_t>(nq * k))};
  if (!device_outputs) {
    gpu::merge_knn(*resources.front(), metric, 0, nq, k, parts, m.distances.data(), m.ids.data());
    return m;
  }
  DeviceArray<float> distances(static_cast<size_t>(nq * k));
  DeviceArray<int64_t> ids(static_cast<size_t>(nq * k));
  gpu::merge_knn(*resources.front(), metric, 0, nq, k, parts, distances.get(), ids.get());
  m.distances = distances.to_host();
  m.ids = ids.to_host();
  return m;
}

void expect_same(const Merged& got, const Merged& want) {
  EXPECT_EQ(got.ids, want.ids);
  ASSERT_EQ(got.distances.size(), want.distances.size());
  for (size_t i = 0; i < got.distances.size(); ++i) ASSERT_EQ(got.distances[i], want.distances[i]) << i;
}

TEST(GpuMergeKnn, MatchesTheHostMerge) {
  QV_REQUIRE_GPU();
  const std::vector<gpu::Resources*> one{&shared_resources()};
  uint64_t seed = 1;
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    for (int64_t parts : {1, 2, 3, 5}) {
      for (int64_t k : {1, 7, 100}) {
        for (int64_t nq : {1, 37}) {
          SCOPED_TRACE(::testing::Message() << "metric " << int(metric) << " parts " << parts << " k " << k << " nq " << nq);
          const std::vector<PartResult> lists = random_lists(parts, nq, k, metric, seed++);
          expect_same(merge_on_device(one, metric, nq, k, lists), merge_on_host(metric, nq, k, lists));
        }
      }
    }
  }
}

TEST(GpuMergeKnn, LargestKAndDeviceOutputs) {
  QV_REQUIRE_GPU();
  const std::vector<gpu::Resources*> one{&shared_resources()};
  const int64_t k = 2048, nq = 3;
  const std::vector<PartResult> lists = random_lists(4, nq, k, Metric::l2, 99);
  const Merged want = merge_on_host(Metric::l2, nq, k, lists);
  expect_same(merge_on_device(one, Metric::l2, nq, k, lists), want);
  expect_same(merge_on_device(one, Metric::l2, nq, k, lists, true), want);
}

TEST(GpuMergeKnn, PartsOnAnotherDevice) {
  QV_REQUIRE_GPU();
  gpu::ResourcesPtr elsewhere = another_device();
  const std::vector<gpu::Resources*> two{&shared_resources(), elsewhere.get()};
  const int64_t k = 33, nq = 51;
  for (int64_t parts : {2, 3}) {
    const std::vector<PartResult> lists = random_lists(parts, nq, k, Metric::inner_product, 7 + parts);
    expect_same(merge_on_device(two, Metric::inner_product, nq, k, lists),
                merge_on_host(Metric::inner_product, nq, k, lists));
  }
}

TEST(GpuMergeKnn, BadArgumentsAreRefused) {
  QV_REQUIRE_GPU();
  gpu::Resources& r = shared_resources();
  gpu::ResultBufferPtr small = gpu::make_result_buffer(r, 10);
  std::vector<float> d(20);
  std::vector<int64_t> ids(20, -1);
  // The one accepted call merges the buffer: rows of missing entries, never uninitialised memory.
  gpu::copy_memory(r, gpu::result_distances(*small), d.data(), 10 * sizeof(float));
  gpu::copy_memory(r, gpu::result_ids(*small), ids.data(), 10 * sizeof(int64_t));
  auto status_of = [&](const std::vector<const gpu::ResultBuffer*>& parts, int64_t nq, int64_t k, int64_t first = 0) {
    try {
      gpu::merge_knn(r, Metric::l2, first, nq, k, parts, d.data(), ids.data());
    } catch (const Error& e) {
      return e.status();
    }
    return Status::ok;
  };
  EXPECT_EQ(status_of({}, 1, 1), Status::invalid_argument);
  EXPECT_EQ(status_of({small.get()}, 2, 10), Status::invalid_argument);  // 20 entries asked of 10
  EXPECT_EQ(status_of({small.get()}, 1, 0), Status::invalid_argument);
  EXPECT_EQ(status_of({small.get(), nullptr}, 1, 1), Status::invalid_argument);
  EXPECT_EQ(status_of({small.get()}, 1, 5, -1), Status::invalid_argument);
  EXPECT_EQ(status_of({small.get()}, 1, 5, 2), Status::invalid_argument);  // rows 2 .. 2 of 2
  EXPECT_EQ(status_of({small.get()}, 2, 5), Status::ok);
  EXPECT_EQ(status_of({small.get()}, 1, 5, 1), Status::ok);
}

// A sharded index's merge: every device merges its own share of the rows (peer copies of those rows
// only), all at once from their own threads; together they are the whole merge.
TEST(GpuMergeKnn, SharesOfTheRowsMergeOnTheirOwnDevices) {
  QV_REQUIRE_GPU();
  gpu::ResourcesPtr elsewhere = another_device();
  const std::vector<gpu::Resources*> devices{&shared_resources(), elsewhere.get(), &shared_resources()};
  const int64_t k = 17, nq = 61;
  const std::vector<PartResult> lists = random_lists(3, nq, k, Metric::l2, 71);
  const Uploaded uploaded = upload(devices, nq, k, lists);
  Merged got{std::vector<float>(size_t(nq * k)), std::vector<int64_t>(size_t(nq * k))};
  const int64_t shares[] = {0, 1, 30, nq};  // one row, then 29, then the rest
  std::vector<std::thread> threads;
  for (int s = 0; s < 3; ++s)
    threads.emplace_back([&, s] {
      gpu::merge_knn(*devices[size_t(s)], Metric::l2, shares[s], shares[s + 1] - shares[s], k, uploaded.parts,
                     got.distances.data() + shares[s] * k, got.ids.data() + shares[s] * k);
    });
  for (std::thread& t : threads) t.join();
  expect_same(got, merge_on_host(Metric::l2, nq, k, lists));
}

// An L2 merge of the uploaded lists into `got` (sized here).
MergeTarget merge_into(Merged& got, const Uploaded& uploaded, int64_t nq, int64_t k) {
  got.distances.assign(size_t(nq * k), 0.0f);
  got.ids.assign(size_t(nq * k), 0);
  MergeTarget target;
  target.metric = Metric::l2;
  target.nq = nq;
  target.k = k;
  target.lists = uploaded.parts;
  target.distances = got.distances.data();
  target.ids = got.ids.data();
  return target;
}

// pipelined_merge.h: the shards' rows merged in runs as they are reported. Each "search" writes its
// list into a buffer first filled with closer entries than any real one (read before its rows are
// reported, they would win the merge), a few rows at a time, reporting each step; the steps differ
// from shard to shard.
TEST(GpuMergeKnn, RowsMergeAsTheShardsReportThem) {
  QV_REQUIRE_GPU();
  gpu::ResourcesPtr elsewhere = another_device();
  const std::vector<gpu::Resources*> devices{&shared_resources(), elsewhere.get(), &shared_resources()};
  std::vector<gpu::ResourcesPtr> kept;
  std::vector<gpu::Resources*> mergers;
  for (int ordinal : {test_device(), another_ordinal(), test_device()}) {
    kept.push_back(resources_on(ordinal));
    mergers.push_back(kept.back().get());
  }
  const int64_t k = 9, nq = 5003;
  const std::vector<PartResult> lists = random_lists(3, nq, k, Metric::l2, 81);
  std::vector<PartResult> poison(3);
  for (size_t p = 0; p < 3; ++p) {
    poison[p].distances.assign(size_t(nq * k), -1e30f);
    poison[p].ids.resize(size_t(nq * k));
    std::iota(poison[p].ids.begin(), poison[p].ids.end(), int64_t(1e9) * int64_t(p + 1));
  }
  const Uploaded uploaded = upload(devices, nq, k, poison);
  Merged got;
  const MergeTarget target = merge_into(got, uploaded, nq, k);
  search_while_merging(mergers, target, [&](int64_t p, const std::function<void(int64_t)>& rows_done) {
    gpu::Resources& r = *devices[size_t(p)];
    gpu::ResultBuffer& buffer = *uploaded.buffers[size_t(p)];
    const int64_t step = 700 + 450 * p;
    for (int64_t q0 = 0; q0 < nq; q0 += step) {
      const int64_t rows = std::min(step, nq - q0);
      gpu::copy_memory(r, gpu::result_distances(buffer) + q0 * k, lists[p].distances.data() + q0 * k, rows * k * 4);
      gpu::copy_memory(r, gpu::result_ids(buffer) + q0 * k, lists[p].ids.data() + q0 * k, rows * k * 8);
      if (p != 1) rows_done(q0 + rows);  // shard 1 reports nothing: all its rows at its end
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  expect_same(got, merge_on_host(Metric::l2, nq, k, lists));
}

// A search that fails after reporting some rows: its error comes back once every thread has ended
// (the merges waiting for rows that will not come stop), the same for a merge that fails.
TEST(GpuMergeKnn, AFailedSearchOrMergeEndsThePipeline) {
  QV_REQUIRE_GPU();
  std::vector<gpu::Resources*> mergers{&shared_resources(), &shared_resources()};
  const int64_t k = 4, nq = 3000;
  const std::vector<PartResult> lists = random_lists(2, nq, k, Metric::l2, 82);
  const Uploaded uploaded = upload(mergers, nq, k, lists);
  Merged got;
  const MergeTarget target = merge_into(got, uploaded, nq, k);
  auto status_of = [&](const MergeTarget& t, int64_t failing_part) {
    try {
      search_while_merging(mergers, t, [&](int64_t p, const std::function<void(int64_t)>& rows_done) {
        rows_done(1500);
        if (p == failing_part) fail(Status::cancelled, "search ", p, " failed");
      });
    } catch (const Error& e) {
      return e.status();
    }
    return Status::ok;
  };
  EXPECT_EQ(status_of(target, 0), Status::cancelled);
  EXPECT_EQ(status_of(target, 1), Status::cancelled);
  EXPECT_EQ(status_of(target, -1), Status::ok);
  MergeTarget too_many = target;
  too_many.k = 5;  // 3000 x 5 entries asked of buffers of 3000 x 4: every merge is refused
  EXPECT_EQ(status_of(too_many, -1), Status::invalid_argument);
}

}  // namespace
}  // namespace quiver::testing
