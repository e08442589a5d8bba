// The sorting and merging networks and WarpSelect of cuda/select, run on the CPU through an emulated
// warp (emulated_lanes.h). These need no GPU: they check the algorithms themselves, exhaustively by
// the 0-1 principle on a 4-lane warp and on random data with ties on a 32-lane warp, so a failure on
// the device points at the device code, not at the networks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "cuda/select/network.h"
#include "cuda/select/warp_select.h"
#include "emulated_lanes.h"

namespace quiver {
namespace {

using gpu::net::merge_keep_smallest;
using gpu::net::merge_odd;
using gpu::net::sort_odd;

using Pair = std::pair<float, int32_t>;

template <class M, int N>
struct Array {
  typename M::Key k[N];
  typename M::Val v[N];

  void load(const std::vector<Pair>& in) {
    for (int e = 0; e < N * M::kWidth; ++e) {
      k[e / M::kWidth].at[e % M::kWidth] = in[e].first;
      v[e / M::kWidth].at[e % M::kWidth] = in[e].second;
    }
  }
  std::vector<Pair> store() const {
    std::vector<Pair> out(N * M::kWidth);
    for (int e = 0; e < N * M::kWidth; ++e)
      out[e] = {k[e / M::kWidth].at[e % M::kWidth], v[e / M::kWidth].at[e % M::kWidth]};
    return out;
  }
};

// Every 0-1 input of N registers of a 4-lane warp comes out sorted (0-1 principle: then every input
// does). Values are the positions, so pairs are distinct as in real use.
template <int N>
void exhaustive_sort() {
  using M = testing::EmulatedLanes<int32_t, 4>;
  constexpr int kElems = N * 4;
  for (uint32_t bits = 0; bits < (1u << kElems); ++bits) {
    std::vector<Pair> in(kElems);
    for (int e = 0; e < kElems; ++e) in[e] = {float((bits >> e) & 1), 0};
    Array<M, N> a;
    a.load(in);
    sort_odd<M, 0, N>(a.k, a.v);
    auto out = a.store();
    ASSERT_TRUE(std::is_sorted(out.begin(), out.end())) << "N = " << N << " input bits " << bits;
  }
}

TEST(SelectNetwork, SortOddIsExhaustivelyCorrectOnFourLanes) {
  exhaustive_sort<1>();
  exhaustive_sort<2>();
  exhaustive_sort<3>();
  exhaustive_sort<4>();
}

// merge-odd of every pair of sorted 0-1 inputs of NL and NR registers.
template <int NL, int NR>
void exhaustive_merge() {
  using M = testing::EmulatedLanes<int32_t, 4>;
  constexpr int L = NL * 4, R = NR * 4;
  for (int zl = 0; zl <= L; ++zl) {
    for (int zr = 0; zr <= R; ++zr) {
      std::vector<Pair> in(L + R);
      for (int e = 0; e < L; ++e) in[e] = {e < zl ? 0.f : 1.f, 0};
      for (int e = 0; e < R; ++e) in[L + e] = {e < zr ? 0.f : 1.f, 0};
      Array<M, NL + NR> a;
      a.load(in);
      merge_odd<M, 0, NL, NR>(a.k, a.v);
      auto out = a.store();
      ASSERT_TRUE(std::is_sorted(out.begin(), out.end()))
          << "NL = " << NL << " NR = " << NR << " zeros " << zl << ", " << zr;

      // The smallest-half merge used for the warp queue.
      Array<M, NL> w;
      Array<M, NR> b;
      w.load(std::vector<Pair>(in.begin(), in.begin() + L));
      b.load(std::vector<Pair>(in.begin() + L, in.end()));
      merge_keep_smallest<M, NL, NR>(w.k, w.v, b.k, b.v);
      auto kept = w.store();
      std::vector<Pair> expect(in);
      std::sort(expect.begin(), expect.end());
      expect.resize(L);
      ASSERT_EQ(kept, expect) << "keep-smallest NL = " << NL << " NR = " << NR;
    }
  }
}

TEST(SelectNetwork, MergeOddIsExhaustivelyCorrectOnFourLanes) {
  exhaustive_merge<1, 1>();
  exhaustive_merge<1, 2>();
  exhaustive_merge<2, 1>();
  exhaustive_merge<1, 3>();
  exhaustive_merge<3, 1>();
  exhaustive_merge<2, 3>();
  exhaustive_merge<3, 2>();
  exhaustive_merge<3, 5>();
  exhaustive_merge<5, 3>();
  exhaustive_merge<4, 4>();
  exhaustive_merge<8, 3>();
  exhaustive_merge<16, 8>();
  exhaustive_merge<32, 6>();
  exhaustive_merge<64, 8>();
}

// Random keys from a small range (many ties) with distinct values on a 32-lane warp.
template <int N, bool kRolled = false>
void random_sort(std::mt19937& gen) {
  using M = testing::EmulatedLanes<int32_t, 32, kRolled>;
  std::uniform_int_distribution<int> key(0, 20);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Pair> in(N * 32);
    for (size_t e = 0; e < in.size(); ++e) in[e] = {float(key(gen)), int32_t(e * 7919 % 100003)};
    Array<M, N> a;
    a.load(in);
    sort_odd<M, 0, N>(a.k, a.v);
    std::vector<Pair> expect(in);
    std::sort(expect.begin(), expect.end());
    ASSERT_EQ(a.store(), expect) << "N = " << N;
  }
}

TEST(SelectNetwork, SortOddSortsRandomPairsOnThirtyTwoLanes) {
  std::mt19937 gen(7);
  random_sort<1>(gen);
  random_sort<2>(gen);
  random_sort<3>(gen);
  random_sort<6>(gen);
  random_sort<8>(gen);
  random_sort<11>(gen);
  random_sort<3, true>(gen);
  random_sort<8, true>(gen);
}

// WarpSelect over a stream against a sorted reference: the first k pairs, ties to the smaller value.
template <typename V, int KR, int T, bool kRolled = (KR >= 16)>
void warp_select_stream(int64_t length, int64_t k, int key_range, uint32_t seed) {
  using M = testing::EmulatedLanes<V, 32, kRolled>;
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> key(0, key_range);
  std::vector<std::pair<float, V>> all(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) all[i] = {float(key(gen)), V(i)};

  gpu::WarpSelect<M, KR, T> ws;
  ws.reset(int(k));
  for (int64_t base = 0; base < length; base += 32) {
    typename M::Key kk;
    typename M::Val vv;
    for (int l = 0; l < 32; ++l) {
      const int64_t i = base + l;
      kk.at[l] = i < length ? all[i].first : gpu::kSentinelKey;
      vv.at[l] = i < length ? all[i].second : gpu::SentinelValue<V>::value;
    }
    ws.add(kk, vv);
  }
  ws.finish();

  std::sort(all.begin(), all.end());
  for (int64_t e = 0; e < k; ++e) {
    const float got_k = ws.wk[e / 32].at[e % 32];
    const V got_v = ws.wv[e / 32].at[e % 32];
    if (e < length) {
      ASSERT_EQ(got_k, all[e].first) << "rank " << e << " of k = " << k << ", length " << length;
      ASSERT_EQ(got_v, all[e].second) << "rank " << e << " of k = " << k << ", length " << length;
    } else {
      ASSERT_EQ(got_v, gpu::SentinelValue<V>::value) << "rank " << e << " should be empty";
    }
  }
}

TEST(SelectNetwork, WarpSelectMatchesSortOnRandomStreams) {
  // The (KR, T) buckets of cuda/select/buckets.h, with streams shorter and longer than k, many ties.
  // k is the bucket's capacity, or less (the limit is then the k-th entry, inside a register).
  const int64_t lengths[] = {1, 31, 100, 1000, 5000};
  for (int64_t length : lengths) {
    warp_select_stream<int32_t, 1, 2>(length, 32, 50, 1);
    warp_select_stream<int32_t, 1, 2>(length, 1, 50, 11);
    warp_select_stream<int32_t, 1, 2>(length, 10, 1 << 20, 12);
    warp_select_stream<int32_t, 2, 3>(length, 64, 1000, 2);
    warp_select_stream<int32_t, 2, 3>(length, 33, 1000, 13);
    warp_select_stream<int32_t, 4, 3>(length, 128, 3, 3);
    warp_select_stream<int32_t, 4, 3>(length, 100, 1 << 20, 14);
    warp_select_stream<int64_t, 8, 4>(length, 256, 1 << 20, 4);
    warp_select_stream<int32_t, 16, 6>(length, 512, 100, 5);
    warp_select_stream<int32_t, 16, 6>(length, 300, 100, 15);
  }
  warp_select_stream<int32_t, 32, 8>(20000, 1000, 1 << 20, 16);
  warp_select_stream<int32_t, 32, 8>(20000, 1024, 1 << 20, 6);
  warp_select_stream<int64_t, 64, 8>(20000, 2048, 5000, 7);
  warp_select_stream<int32_t, 64, 8>(3000, 2048, 10, 8);
  warp_select_stream<int32_t, 4, 3, true>(5000, 100, 1 << 20, 9);
  warp_select_stream<int32_t, 32, 8, false>(5000, 1000, 1 << 20, 10);
}

// Sorted input is the worst case for the thread queues (every pair is kept until the queue fills);
// reverse-sorted input makes the limit fall on every merge.
TEST(SelectNetwork, WarpSelectHandlesMonotoneStreams) {
  using M = testing::EmulatedLanes<int32_t, 32>;
  for (bool ascending : {true, false}) {
    gpu::WarpSelect<M, 4, 3> ws;
    ws.reset();
    const int64_t length = 4096;
    for (int64_t base = 0; base < length; base += 32) {
      M::Key kk;
      M::Val vv;
      for (int l = 0; l < 32; ++l) {
        const int64_t i = base + l;
        kk.at[l] = float(ascending ? i : length - i);
        vv.at[l] = int32_t(i);
      }
      ws.add(kk, vv);
    }
    ws.finish();
    for (int e = 0; e < 128; ++e) {
      const float expect = ascending ? float(e) : float(e + 1);
      EXPECT_EQ(ws.wk[e / 32].at[e % 32], expect) << (ascending ? "ascending" : "descending");
    }
  }
}

}  // namespace
}  // namespace quiver
