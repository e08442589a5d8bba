#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cpp/core/thread_pool.h"

namespace quiver {
namespace {

TEST(ThreadPool, RunsEveryTaskOnce) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> hits(1000);
    pool.parallel_for(1000, [&](int64_t i) { hits[i]++; });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, RethrowsTheFirstError) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(100,
                                 [](int64_t i) {
                                   if (i == 17) throw std::runtime_error("task 17");
                                 }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> count{0};
  pool.parallel_for(10, [&](int64_t) { count++; });
  EXPECT_EQ(count.load(), 10);
}

TEST(ThreadPool, ManyCallersShareOnePool) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < 20; ++round) pool.parallel_for(50, [&](int64_t i) { total += i; });
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 8 * 20 * (49 * 50 / 2));
}

}  // namespace
}  // namespace quiver
