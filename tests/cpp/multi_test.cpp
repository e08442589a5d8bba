// The pieces of the multi-device kinds (cpp/multi/): descriptors, how adds are shared out, how
// shards' results are merged, and that parts really hold their shares.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "cpp/core/error.h"
#include "cpp/index/factory.h"
#include "cpp/multi/composite_index.h"
#include "cpp/multi/merge_results.h"
#include "cpp/multi/multi_spec.h"
#include "cpp/multi/routed_index.h"
#include "cpp/multi/run_parts.h"
#include "cpp/multi/sharded_index.h"

namespace quiver {
namespace {

TEST(MultiSpec, ParsesModesCountsAndTheNestedForm) {
  MultiSpec spec = parse_multi_descriptor("Sharded4,IVF64,PQ8");
  EXPECT_EQ(spec.mode, MultiSpec::Mode::sharded);
  EXPECT_EQ(spec.parts, 4);
  EXPECT_EQ(spec.child, "IVF64,PQ8");
  spec = parse_multi_descriptor("Replicated,Sharded2,Flat");
  EXPECT_EQ(spec.mode, MultiSpec::Mode::replicated);
  EXPECT_EQ(spec.parts, 0);
  EXPECT_EQ(spec.child, "Sharded2,Flat");
  EXPECT_FALSE(is_multi_descriptor("Flat"));
  EXPECT_THROW(parse_multi_descriptor("Sharded64x,Flat"), Error);
}

std::vector<int64_t> Finals(const std::vector<int64_t>& counts, const std::vector<int64_t>& shares) {
  std::vector<int64_t> out(counts.size());
  for (size_t p = 0; p < counts.size(); ++p) out[p] = counts[p] + shares[p];
  return out;
}

// Every part runs at once, each on its own thread (the caller's the first); each part's exception
// comes back in its place; threads are kept for the next call.
TEST(RunParts, PartsRunAtOnceAndKeepTheirErrors) {
  const int64_t parts = 5;
  for (int call = 0; call < 3; ++call) {
    std::atomic<int64_t> arrived{0};
    std::vector<std::thread::id> threads(parts);
    const std::vector<std::exception_ptr> errors = run_parts(parts, [&](int64_t p) {
      threads[p] = std::this_thread::get_id();
      ++arrived;
      while (arrived.load() < parts) std::this_thread::yield();  // returns only if all run at once
      if (p % 2 == 1) throw std::runtime_error("part " + std::to_string(p));
    });
    EXPECT_EQ(threads[0], std::this_thread::get_id());
    EXPECT_EQ(std::set<std::thread::id>(threads.begin(), threads.end()).size(), size_t(parts));
    for (int64_t p = 0; p < parts; ++p) EXPECT_EQ(errors[p] != nullptr, p % 2 == 1) << "part " << p;
  }
  EXPECT_THROW(run_parts_or_throw(3, [](int64_t p) {
                 if (p == 2) throw Error(Status::invalid_argument, "two");
               }),
               Error);
  EXPECT_TRUE(run_parts(0, [](int64_t) { FAIL(); }).empty());
}

// A child made by fork() after parts have run (their threads idle in the parent) runs parts of its
// own: it does not wait on the parent's threads, which it does not have.
TEST(RunParts, AForkedChildRunsItsOwnParts) {
  run_parts(4, [](int64_t) {});
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a child waiting on threads it does not have ends here
    std::atomic<int64_t> ran{0};
    run_parts(4, [&](int64_t) { ++ran; });
    _exit(ran.load() == 4 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

TEST(BalancedShares, EvensOutCountsAndSkipsFullShards) {
  const std::vector<bool> none(4, false);
  EXPECT_EQ(balanced_shares(10, {0, 0, 0, 0}, none), (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(Finals({5, 0, 9, 2}, balanced_shares(6, {5, 0, 9, 2}, none)), (std::vector<int64_t>{5, 4, 9, 4}));
  EXPECT_EQ(balanced_shares(0, {1, 2, 3, 4}, none), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(balanced_shares(7, {0, 0, 0, 0}, {true, false, true, false}), (std::vector<int64_t>{0, 4, 0, 3}));
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t parts = 1 + rng() % 7;
    std::vector<int64_t> counts(parts);
    for (auto& c : counts) c = static_cast<int64_t>(rng() % 50);
    const int64_t n = static_cast<int64_t>(rng() % 200);
    const std::vector<int64_t> shares = balanced_shares(n, counts, std::vector<bool>(parts, false));
    EXPECT_EQ(std::accumulate(shares.begin(), shares.end(), int64_t{0}), n);
    const std::vector<int64_t> finals = Finals(counts, shares);
    // Every shard that took something ends within one of the smallest final count.
    const int64_t low = *std::min_element(finals.begin(), finals.end());
    for (size_t p = 0; p < parts; ++p) {
      EXPECT_GE(shares[p], 0);
      if (shares[p] > 0) EXPECT_LE(finals[p], low + 1);
    }
  }
}

TEST(MergeKnn, TakesTheBestKWithTiesByIdAndPadding) {
  ThreadPool pool(2);
  const float inf = missing_distance(Metric::l2);
  std::vector<PartResult> parts(2);
  parts[0] = {{1, 3, inf}, {10, 30, -1}};
  parts[1] = {{1, 2, 5}, {4, 20, 50}};
  std::vector<float> d(3);
  std::vector<int64_t> ids(3);
  merge_knn(pool, Metric::l2, 1, 3, parts.data(), 2, d.data(), ids.data());
  EXPECT_EQ(ids, (std::vector<int64_t>{4, 10, 20}));
  EXPECT_EQ(d, (std::vector<float>{1, 1, 2}));
  // Similarities: larger first; fewer than k hits in all: padded.
  parts[0] = {{0.9f, -inf, -inf}, {1, -1, -1}};
  parts[1] = {{0.95f, -inf, -inf}, {2, -1, -1}};
  merge_knn(pool, Metric::inner_product, 1, 3, parts.data(), 2, d.data(), ids.data());
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 1, -1}));
  EXPECT_EQ(d[2], -inf);
}

TEST(ShardedIndex, PartsHoldBalancedShares) {
  ContextOptions options;
  options.device = DeviceKind::cpu;
  options.cpu_threads = 2;
  Context context(options);
  auto index = create_index(context, "Sharded3,Flat", 4, Metric::l2);
  const auto& sharded = dynamic_cast<const CompositeIndex&>(*index);
  ASSERT_EQ(sharded.part_count(), 3);
  std::vector<float> x(4 * 100, 1.0f);
  index->add(10, x.data(), nullptr);
  index->add(90, x.data(), nullptr);
  for (int64_t p = 0; p < 3; ++p) EXPECT_NEAR(sharded.part(p).count(), 33, 1) << p;
  EXPECT_EQ(index->count(), 100);
  EXPECT_EQ(index->kind(), IndexKind::sharded);
}

// 64 shards at k = 2048: the shards' results of 400 queries exceed the kept buffers, so the search
// goes in chunks of queries; the merged result is still the single index's.
TEST(ShardedIndex, LargeResultsGoInChunks) {
  ContextOptions options;
  options.device = DeviceKind::cpu;
  options.cpu_threads = 2;
  Context context(options);
  const int64_t n = 500, nq = 400, dim = 3, k = kMaxK;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> x(static_cast<size_t>(n * dim)), q(static_cast<size_t>(nq * dim));
  for (float& v : x) v = uniform(rng);
  for (float& v : q) v = uniform(rng);
  auto single = create_index(context, "Flat", dim, Metric::l2);
  auto sharded = create_index(context, "Sharded64,Flat", dim, Metric::l2);
  single->add(n, x.data(), nullptr);
  sharded->add(n, x.data(), nullptr);
  std::vector<float> want_d(static_cast<size_t>(nq * k)), got_d(want_d.size());
  std::vector<int64_t> want_i(want_d.size()), got_i(want_d.size());
  single->search(nq, q.data(), k, SearchOptions{}, want_d.data(), want_i.data());
  sharded->search(nq, q.data(), k, SearchOptions{}, got_d.data(), got_i.data());
  int64_t same = 0;
  for (size_t i = 0; i < want_i.size(); ++i) same += want_i[i] == got_i[i];
  EXPECT_GE(same, static_cast<int64_t>(want_i.size()) * 999 / 1000);  // only float ties may swap
  EXPECT_EQ(got_i[k - 1], -1);
}

// Clusters dealt to parts keep regions together: a small ball reaches few of the parts.
TEST(RoutedIndex, SmallBallsReachFewParts) {
  ContextOptions options;
  options.device = DeviceKind::cpu;
  options.cpu_threads = 2;
  Context context(options);
  const int64_t n = 4000, nq = 100, dim = 4;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(0, 100);
  std::vector<float> x(static_cast<size_t>(n * dim)), q(static_cast<size_t>(nq * dim));
  for (float& v : x) v = uniform(rng);
  for (float& v : q) v = uniform(rng);
  auto index = create_index(context, "Routed4,LC100", dim, Metric::l1);
  index->add(n, x.data(), nullptr);
  const auto& routed = dynamic_cast<const RoutedIndex&>(*index);
  const RangeResult small = index->range_search(nq, q.data(), 2.0f, SearchOptions{});
  EXPECT_LT(routed.last_routed_fraction(), 0.6);
  index->range_search(nq, q.data(), 1000.0f, SearchOptions{});
  EXPECT_EQ(routed.last_routed_fraction(), 1.0);
  EXPECT_EQ(small.lims.size(), static_cast<size_t>(nq + 1));
}

}  // namespace
}  // namespace quiver
