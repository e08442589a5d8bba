// WarpSelect (the paper's §4.2): one warp keeps the k smallest (key, value) pairs of a stream in
// registers. Each lane owns a thread queue of T candidates; the warp shares a sorted warp queue of
// KR registers (KR * W entries, W = warp width) in lane-stride order. No shared memory.
//
// Invariant: every pair seen that may still belong to the k best is in the warp queue or a thread
// queue, and every thread-queue entry is smaller than the warp queue's k-th entry (`limit`). A new
// pair is kept only if it is smaller than `limit`: then the warp queue plus the thread queues hold
// all the pairs that may be in the result. When some lane's thread queue is full (a warp vote), the
// thread queues are sorted as one lane-stride array of T registers (sort-odd) and merged into the warp
// queue (merge-odd, keeping the smallest half); the rest is dropped: it is larger than the new limit.
//
// This differs from the paper's Algorithm 3 only in how a lane queues its candidates: the paper keeps
// each thread queue sorted and admits pairs under the lane's own largest entry; here a thread queue is
// an unsorted buffer filled by a register shift (no comparisons) and admits pairs under the warp
// queue's limit, which is never looser. Both sort the thread queues from scratch before the merge.
//
// Written against a lane model M (network.h) so the CPU tests run this very code. CUDA-free.
#pragma once

#include <cstdint>

#include "cuda/select/network.h"

namespace quiver::gpu {

// The sentinel that fills empty queue slots: (+inf, largest value). Every real pair, +inf keys
// included, orders before it, so sentinels sort last and are never taken for results.
constexpr float kSentinelKey = __builtin_huge_valf();

template <typename V>
struct SentinelValue;
template <>
struct SentinelValue<int32_t> {
  static constexpr int32_t value = 0x7fffffff;
};
template <>
struct SentinelValue<int64_t> {
  static constexpr int64_t value = 0x7fffffffffffffffLL;
};

template <class M, int KR, int T>
struct WarpSelect {
  using Key = typename M::Key;
  using Val = typename M::Val;
  using Bool = typename M::Bool;
  using Int = typename M::Int;
  using Raw = typename M::RawVal;
  static constexpr int kCapacity = KR * M::kWidth;  // the largest k this queue serves

  Key wk[KR];  // warp queue, ascending in lane-stride order
  Val wv[KR];
  Key tk[T];  // thread queue: an unsorted buffer, valid entries at [0, count)
  Val tv[T];
  Int count;
  Key limit_k;  // the warp queue's k-th entry, the same in every lane
  Val limit_v;
  int limit_reg = KR - 1;  // where the k-th entry lives: register and lane
  int limit_lane = M::kWidth - 1;

  // k (1 .. kCapacity) is the number of results wanted: the limit is the k-th entry, not the last of
  // the queue, so a k of 10 in a 32-entry queue admits only what can still be in the best 10.
  QV_LANES void reset(int k = kCapacity) {
    limit_reg = (k - 1) / M::kWidth;
    limit_lane = (k - 1) % M::kWidth;
    QV_UNROLL
    for (int r = 0; r < KR; ++r) {
      wk[r] = M::splat_key(kSentinelKey);
      wv[r] = M::splat_val(SentinelValue<Raw>::value);
    }
    clear_thread_queues();
    limit_k = M::splat_key(kSentinelKey);
    limit_v = M::splat_val(SentinelValue<Raw>::value);
  }

  // Whether add() would keep the pair; lets a caller skip a costly test (a filter look-up) for pairs
  // that would be dropped anyway.
  QV_LANES Bool accepts(Key k, Val v) const { return M::before(k, v, limit_k, limit_v); }

  // Queues one pair per lane (a sentinel where a lane has none) if it may be in the result. Every
  // lane of the warp must call it. Returns (the same in every lane) whether some thread queue is now
  // full: then merge_thread_queues() must run before the next insert. Kernels keep that call in one
  // place, because the merge networks are large and inlined wherever they are called.
  QV_LANES bool insert(Key k, Val v) {
    const Bool take = accepts(k, v);
    if (!M::any(take)) return false;
    QV_UNROLL
    for (int i = T - 1; i > 0; --i) {
      tk[i] = M::sel(take, tk[i - 1], tk[i]);
      tv[i] = M::sel(take, tv[i - 1], tv[i]);
    }
    tk[0] = M::sel(take, k, tk[0]);
    tv[0] = M::sel(take, v, tv[0]);
    count = M::add_if(count, take);
    return M::any(M::equals(count, T));
  }

  // Whether any thread queue holds a pair (the same in every lane).
  QV_LANES bool has_queued() const { return M::any(M::positive(count)); }

  // insert() and the merge when needed: the simple form, for code where size does not matter.
  QV_LANES void add(Key k, Val v) {
    if (insert(k, v)) merge_thread_queues();
  }

  // Flushes the thread queues; afterwards the warp queue holds the result, ascending.
  QV_LANES void finish() {
    if (has_queued()) merge_thread_queues();
  }

  // After the caller wrote a sorted warp queue (a previous result to continue from).
  QV_LANES void refresh_limit() {
    Key k = wk[0];
    Val v = wv[0];
    QV_UNROLL
    for (int r = 1; r < KR; ++r) {  // static register indices; M::pick keeps them so (see the model)
      k = M::pick(r == limit_reg, wk[r], k);
      v = M::pick(r == limit_reg, wv[r], v);
    }
    limit_k = M::broadcast(k, limit_lane);
    limit_v = M::broadcast(v, limit_lane);
  }

  QV_LANES void merge_thread_queues() {
    net::sort_odd<M, 0, T>(tk, tv);
    net::merge_keep_smallest<M, KR, T>(wk, wv, tk, tv);
    clear_thread_queues();
    refresh_limit();
  }

 private:
  QV_LANES void clear_thread_queues() {
    QV_UNROLL
    for (int i = 0; i < T; ++i) {
      tk[i] = M::splat_key(kSentinelKey);
      tv[i] = M::splat_val(SentinelValue<Raw>::value);
    }
    count = M::splat_int(0);
  }
};

}  // namespace quiver::gpu
