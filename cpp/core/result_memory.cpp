#include "cpp/core/result_memory.h"

#include <cstdlib>
#include <deque>
#include <mutex>

namespace quiver::result_memory {

namespace {

// Each block starts with a header holding its usable size; the caller's memory follows it, aligned
// as malloc aligns (the header is a multiple of that).
constexpr size_t kHeader = 64;
static_assert(kHeader % alignof(std::max_align_t) == 0, "the header keeps malloc's alignment");

struct Kept {
  char* raw;
  size_t bytes;
};

struct Cache {
  std::mutex mutex;
  std::deque<Kept> blocks;  // oldest first
  size_t total = 0;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: results may be freed during static destruction
  return *c;
}

size_t& size_of(char* raw) { return *reinterpret_cast<size_t*>(raw); }

}  // namespace

void* allocate(size_t bytes) {
  if (bytes >= kMinRetainedBytes) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto best = c.blocks.end();
    for (auto it = c.blocks.begin(); it != c.blocks.end(); ++it)
      if (it->bytes >= bytes && it->bytes / 2 <= bytes && (best == c.blocks.end() || it->bytes < best->bytes)) best = it;
    if (best != c.blocks.end()) {
      char* raw = best->raw;
      c.total -= best->bytes;
      c.blocks.erase(best);
      return raw + kHeader;
    }
  }
  if (bytes > size_t(-1) - kHeader) throw std::bad_alloc();
  auto* raw = static_cast<char*>(std::malloc(bytes + kHeader));
  if (raw == nullptr) throw std::bad_alloc();
  size_of(raw) = bytes;
  return raw + kHeader;
}

void release(void* p) noexcept {
  if (p == nullptr) return;
  char* raw = static_cast<char*>(p) - kHeader;
  const size_t bytes = size_of(raw);
  if (bytes < kMinRetainedBytes || bytes > kMaxRetainedBytes) {
    std::free(raw);
    return;
  }
  std::deque<Kept> dropped;
  {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    try {
      c.blocks.push_back(Kept{raw, bytes});
    } catch (...) {
      std::free(raw);  // no room to note it: give it back
      return;
    }
    c.total += bytes;
    while (c.total > kMaxRetainedBytes) {
      c.total -= c.blocks.front().bytes;
      try {
        dropped.push_back(c.blocks.front());
      } catch (...) {
        std::free(c.blocks.front().raw);
      }
      c.blocks.pop_front();
    }
  }
  for (const Kept& k : dropped) std::free(k.raw);  // outside the lock: munmap can take a while
}

size_t retained_bytes() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.total;
}

void release_retained() {
  std::deque<Kept> all;
  {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    all.swap(c.blocks);
    c.total = 0;
  }
  for (const Kept& k : all) std::free(k.raw);
}

}  // namespace quiver::result_memory
