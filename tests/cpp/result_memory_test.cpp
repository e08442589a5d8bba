#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "cpp/core/result_memory.h"

namespace quiver {
namespace {

constexpr size_t kLarge = result_memory::kMinRetainedBytes;

TEST(ResultMemory, AFreedLargeBlockIsHandedToTheNextResult) {
  result_memory::release_retained();
  void* first = result_memory::allocate(3 * kLarge);
  result_memory::release(first);
  EXPECT_EQ(result_memory::retained_bytes(), 3 * kLarge);
  // Smaller, but more than half of it: the same block.
  void* again = result_memory::allocate(2 * kLarge);
  EXPECT_EQ(again, first);
  EXPECT_EQ(result_memory::retained_bytes(), 0u);
  // Less than half of a kept block takes a new one.
  result_memory::release(again);
  void* small = result_memory::allocate(kLarge);
  EXPECT_NE(small, first);
  result_memory::release(small);
  result_memory::release_retained();
  EXPECT_EQ(result_memory::retained_bytes(), 0u);
}

TEST(ResultMemory, SmallAndHugeBlocksAreNotKept) {
  result_memory::release_retained();
  result_memory::release(result_memory::allocate(kLarge - 1));
  result_memory::release(result_memory::allocate(result_memory::kMaxRetainedBytes + 1));
  EXPECT_EQ(result_memory::retained_bytes(), 0u);
  result_memory::release(nullptr);
}

TEST(ResultMemory, KeepsAtMostItsLimitOldestGivenBackFirst) {
  result_memory::release_retained();
  const size_t block = result_memory::kMaxRetainedBytes / 3 + 1;
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(result_memory::allocate(block));
  for (void* p : blocks) result_memory::release(p);
  EXPECT_LE(result_memory::retained_bytes(), result_memory::kMaxRetainedBytes);
  EXPECT_EQ(result_memory::retained_bytes(), 2 * block);
  result_memory::release_retained();
}

TEST(ResultMemory, VectorsKeepWhatTheyHoldAndReuseFreedMemory) {
  result_memory::release_retained();
  const size_t count = 3 * kLarge / sizeof(int64_t);
  const int64_t* first = nullptr;
  {
    ResultVector<int64_t> v;
    for (size_t i = 0; i < count; ++i) v.push_back(int64_t(i) * 3);  // grows through several blocks
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(v[i], int64_t(i) * 3);
    ResultVector<int64_t> moved = std::move(v);
    EXPECT_EQ(moved.size(), count);
    first = moved.data();
  }
  ResultVector<int64_t> next;
  next.resize(count);  // entries left to the writer
  EXPECT_EQ(next.data(), first);
  next.assign(count, 7);
  EXPECT_EQ(next.back(), 7);
  ResultVector<float> values(5, 1.5f);
  EXPECT_EQ(values[4], 1.5f);
  result_memory::release_retained();
}

TEST(ResultMemory, ThreadsAllocateAndFreeAtOnce) {
  result_memory::release_retained();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 50; ++i) {
        ResultVector<float> v(kLarge / sizeof(float) + size_t(t * 1000 + i));
        v.front() = float(i);
        v.back() = float(t);
        EXPECT_EQ(v.back(), float(t));
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_LE(result_memory::retained_bytes(), result_memory::kMaxRetainedBytes);
  result_memory::release_retained();
}

}  // namespace
}  // namespace quiver
