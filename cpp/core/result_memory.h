// Host memory for search results that can be large (range search hits): vectors whose elements are
// left uninitialised by resize (every writer fills them) and whose large blocks, once freed, are
// kept for the next result.
//
// Why: a range search at a wide radius returns hundreds of MB. Fresh memory from the OS costs a page
// fault per page on first write, and on the lent GPU machines (virtual machines) that ran at about
// 2.5 GB/s whatever the threads: 200 MB of hits took 75-110 ms to write against 32 ms of search on
// the GPU. A service searches again and again; the blocks the last result freed are already mapped,
// so the next result is written at copy speed. A few blocks are kept (kMaxRetainedBytes in all,
// oldest given back first), never one larger than that.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace quiver {

namespace result_memory {

// Blocks from this size up are kept when freed; smaller ones come and go through malloc.
constexpr size_t kMinRetainedBytes = size_t(1) << 20;
// The most freed memory kept at once, all blocks together.
constexpr size_t kMaxRetainedBytes = size_t(512) << 20;

// `bytes` of memory aligned for any result element (a kept block of at least `bytes` and at most
// twice that, when there is one). Throws std::bad_alloc.
void* allocate(size_t bytes);
// Frees or keeps what allocate returned.
void release(void* p) noexcept;
// Memory kept for reuse now (tests, diagnostics).
size_t retained_bytes();
// Gives every kept block back to the system.
void release_retained();

}  // namespace result_memory

template <typename T>
struct ResultAllocator {
  static_assert(std::is_trivially_destructible_v<T>, "result elements are plain values");
  using value_type = T;

  ResultAllocator() = default;
  template <typename U>
  ResultAllocator(const ResultAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    if (n > size_t(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(result_memory::allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t) noexcept { result_memory::release(p); }

  // resize(n) leaves new elements uninitialised: no zero fill of memory about to be written.
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  friend bool operator==(const ResultAllocator&, const ResultAllocator&) { return true; }
  friend bool operator!=(const ResultAllocator&, const ResultAllocator&) { return false; }
};

template <typename T>
using ResultVector = std::vector<T, ResultAllocator<T>>;

}  // namespace quiver
