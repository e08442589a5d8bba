// Faulting in the pages of the range search's host results ahead of their first write
// (range_search.cu). The results of a wide radius are hundreds of MB of fresh memory; its first
// touch, single-threaded inside std::vector::resize, ran at about 2 GB/s on the H100 host (a VM:
// a fault per 4 KB page) and cost more than the whole search on the GPU. Here a few threads fault
// the reserved capacity in (MADV_POPULATE_WRITE, Linux 5.14 and later; huge pages asked for first)
// while the search goes on; the contents are left alone, so writers need not wait for them. Elsewhere,
// or where the kernel refuses, it does nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace quiver::gpu {

class RangePrefault {
 public:
  // Ranges below this are left to the first write: threads cost more than they save.
  static constexpr size_t kMinBytes = size_t(4) << 20;
  // Threads per start: page faults of one process scale over a few cores, not many.
  static constexpr unsigned kMaxThreads = 8;

  RangePrefault() = default;
  RangePrefault(const RangePrefault&) = delete;
  RangePrefault& operator=(const RangePrefault&) = delete;
  ~RangePrefault() { join(); }

  // Starts faulting in [begin, begin + bytes) of each range (owned by the caller, which keeps them
  // allocated until join). Joins any earlier start first.
  void start(const std::vector<std::pair<void*, size_t>>& ranges) {
    join();
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    constexpr uintptr_t kPage = 4096;
    std::vector<std::pair<uintptr_t, uintptr_t>> pages;  // page-aligned [first, last)
    size_t total = 0;
    for (const auto& [p, bytes] : ranges) {
      const auto begin = reinterpret_cast<uintptr_t>(p);
      const uintptr_t first = (begin + kPage - 1) / kPage * kPage, last = (begin + bytes) / kPage * kPage;
      if (last > first) {
        pages.emplace_back(first, last);
        total += last - first;
      }
    }
    if (total < kMinBytes) return;
    for (const auto& [first, last] : pages) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
    const unsigned threads = std::clamp(std::thread::hardware_concurrency() / 2, 1u, kMaxThreads);
    const size_t slice = (total / threads + kPage - 1) / kPage * kPage;
    // Cuts the ranges into slices of about total / threads bytes, one thread each.
    std::vector<std::vector<std::pair<uintptr_t, uintptr_t>>> work(1);
    size_t filled = 0;
    for (auto [first, last] : pages) {
      while (first < last) {
        const uintptr_t end = std::min(last, first + (slice - filled));
        work.back().emplace_back(first, end);
        filled += end - first;
        first = end;
        if (filled >= slice) {
          work.emplace_back();
          filled = 0;
        }
      }
    }
    for (auto& w : work) {
      if (w.empty()) continue;
      try {
        threads_.emplace_back([w = std::move(w)] {
          for (const auto& [first, last] : w)
            madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
        });
      } catch (...) {
        break;  // no thread: the first writes fault the pages in
      }
    }
#else
    (void)ranges;
#endif
  }

  // Waits for the threads of the last start.
  void join() {
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  std::vector<std::thread> threads_;
};

}  // namespace quiver::gpu
