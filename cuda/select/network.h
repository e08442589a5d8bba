// Sorting and merging networks over lane-stride arrays held in registers (Johnson, Douze, Jégou,
// "Billion-scale similarity search with GPUs", §4.1, Algorithms 1 and 2).
//
// An array of N registers holds N * W elements (W = the warp width): element e lives in register
// e / W of lane e % W. Arrays are ordered by (key, value) lexicographically, so equal keys are ordered
// by the smaller value (the smaller row id) and every result is independent of the order of the input.
//
// Sizes are counted in registers, so every array length is a multiple of W ("in practice, used array
// lengths are multiples of 32 as they are held in lane-stride arrays"), but not a power of two: a
// thread queue of 3 registers is a 96-element array, and merging it with a 1024-element warp queue is
// an odd-size merge. Compare-swaps at a distance that is a multiple of W stay inside a lane; the others
// are warp shuffles.
//
// The code is written once against a lane model M (see warp_lanes.cuh for the GPU, where each value
// is one lane's register, and tests/gpu/emulated_lanes.h, where a value holds all W lanes), so the CPU
// tests run exactly the networks the GPU runs. This header includes no CUDA header on purpose.
#pragma once

#if defined(__CUDACC__)
#define QV_LANES __device__ __forceinline__
#define QV_UNROLL _Pragma("unroll")
#define QV_CONSTEXPR __host__ __device__ constexpr
#else
#define QV_LANES inline
#define QV_UNROLL
#define QV_CONSTEXPR constexpr
#endif

namespace quiver::gpu::net {

// Largest power of two strictly below n (n >= 2): the first comparator distance of the paper's
// merge-odd-continue, here in registers.
QV_CONSTEXPR int pow2_below(int n) {
  int p = 1;
  while (p * 2 < n) p *= 2;
  return p;
}

QV_CONSTEXPR int min_int(int a, int b) { return a < b ? a : b; }

// a, b <- (min, max) of the pair, within one lane.
template <class M>
QV_LANES void swap_in_lane(typename M::Key& ak, typename M::Val& av, typename M::Key& bk,
                           typename M::Val& bv) {
  const typename M::Bool b_first = M::before(bk, bv, ak, av);
  const typename M::Key lo_k = M::sel(b_first, bk, ak);
  const typename M::Val lo_v = M::sel(b_first, bv, av);
  bk = M::sel(b_first, ak, bk);
  bv = M::sel(b_first, av, bv);
  ak = lo_k;
  av = lo_v;
}

// Compare-swap between each lane and lane ^ mask: the lower lane of the pair keeps the smaller entry.
template <class M>
QV_LANES void swap_across_lanes(typename M::Key& k, typename M::Val& v, int mask) {
  const typename M::Key other_k = M::shfl_xor(k, mask);
  const typename M::Val other_v = M::shfl_xor(v, mask);
  const typename M::Bool other_first = M::before(other_k, other_v, k, v);
  const typename M::Bool take = M::same(other_first, M::lower_lane(mask));
  k = M::sel(take, other_k, k);
  v = M::sel(take, other_v, v);
}

// The shuffle stages of one register: half-cleaners at distances W/2 .. 1. A model with kRolled
// keeps them a loop (the distance is only a shuffle operand): large queues then fit the instruction
// cache; small ones, limited by issue, unroll.
template <class M>
QV_LANES void clean_register(typename M::Key& k, typename M::Val& v) {
  if constexpr (M::kRolled) {
#if defined(__CUDACC__)
#pragma unroll 1
#endif
    for (int d = M::kWidth / 2; d > 0; d /= 2) swap_across_lanes<M>(k, v, d);
  } else {
    QV_UNROLL
    for (int d = M::kWidth / 2; d > 0; d /= 2) swap_across_lanes<M>(k, v, d);
  }
}

// Sorts one register (W elements) ascending: bitonic sort with the first stage of each merge
// reversed, so that both halves are merged while ascending (monotonic, not bitonic, inputs).
template <class M>
QV_LANES void sort_register(typename M::Key& k, typename M::Val& v) {
  if constexpr (M::kRolled) {
#if defined(__CUDACC__)
#pragma unroll 1
#endif
    for (int half = 1; half < M::kWidth; half *= 2) {
      swap_across_lanes<M>(k, v, 2 * half - 1);  // lane i against lane 2*half-1-i of its block
#if defined(__CUDACC__)
#pragma unroll 1
#endif
      for (int d = half / 2; d > 0; d /= 2) swap_across_lanes<M>(k, v, d);
    }
  } else {
    QV_UNROLL
    for (int half = 1; half < M::kWidth; half *= 2) {
      swap_across_lanes<M>(k, v, 2 * half - 1);
      QV_UNROLL
      for (int d = half / 2; d > 0; d /= 2) swap_across_lanes<M>(k, v, d);
    }
  }
}

// merge-odd-continue (Algorithm 1) on registers [A, A + N): the array is the left (kLeft) or right
// output of a merge's first stage and becomes sorted.
template <class M, int A, int N, bool kLeft, typename K, typename V>
QV_LANES void merge_continue_impl(K* k, V* v) {
  if constexpr (N == 1) {
    clean_register<M>(k[A], v[A]);
  } else {
    constexpr int H = pow2_below(N);
    QV_UNROLL
    for (int r = 0; r < N - H; ++r) swap_in_lane<M>(k[A + r], v[A + r], k[A + r + H], v[A + r + H]);
    if constexpr (kLeft) {
      merge_continue_impl<M, A, N - H, true>(k, v);
      merge_continue_impl<M, A + N - H, H, false>(k, v);
    } else {
      merge_continue_impl<M, A, H, true>(k, v);
      merge_continue_impl<M, A + H, N - H, false>(k, v);
    }
  }
}

// merge-odd (Algorithm 1): registers [A, A + NL) and [A + NL, A + NL + NR), each sorted ascending,
// become one sorted array. The first stage compares element NL*W - 1 - i of the left with element i
// of the right: register A+NL-1-j against register A+NL+j with the lanes reversed.
template <class M, int A, int NL, int NR, typename K, typename V>
QV_LANES void merge_odd(K* k, V* v) {
  QV_UNROLL
  for (int j = 0; j < min_int(NL, NR); ++j) {
    constexpr int kReverse = M::kWidth - 1;
    K& lk = k[A + NL - 1 - j];
    V& lv = v[A + NL - 1 - j];
    K& rk = k[A + NL + j];
    V& rv = v[A + NL + j];
    const K from_right_k = M::shfl_xor(rk, kReverse);
    const V from_right_v = M::shfl_xor(rv, kReverse);
    const K from_left_k = M::shfl_xor(lk, kReverse);
    const V from_left_v = M::shfl_xor(lv, kReverse);
    const typename M::Bool right_first = M::before(from_right_k, from_right_v, lk, lv);
    const typename M::Bool left_first = M::before(from_left_k, from_left_v, rk, rv);
    lk = M::sel(right_first, from_right_k, lk);  // the left keeps the smaller of the pair
    lv = M::sel(right_first, from_right_v, lv);
    rk = M::sel(left_first, rk, from_left_k);  // the right keeps the larger
    rv = M::sel(left_first, rv, from_left_v);
  }
  merge_continue_impl<M, A, NL, true>(k, v);
  merge_continue_impl<M, A + NL, NR, false>(k, v);
}

// sort-odd (Algorithm 2) on registers [A, A + N).
template <class M, int A, int N, typename K, typename V>
QV_LANES void sort_odd(K* k, V* v) {
  if constexpr (N == 1) {
    sort_register<M>(k[A], v[A]);
  } else {
    constexpr int NL = N / 2;
    sort_odd<M, A, NL>(k, v);
    sort_odd<M, A + NL, N - NL>(k, v);
    merge_odd<M, A, NL, N - NL>(k, v);
  }
}

// The NW smallest of a sorted NW-register array w and a sorted NB-register array b, sorted, into w:
// the left half of merge-odd(w, b). The right output is never needed, so only the left side of the
// first stage is computed (one shuffle per register pair instead of two).
template <class M, int NW, int NB, typename K, typename V>
QV_LANES void merge_keep_smallest(K* wk, V* wv, const K* bk, const V* bv) {
  QV_UNROLL
  for (int j = 0; j < min_int(NW, NB); ++j) {
    const K other_k = M::shfl_xor(bk[j], M::kWidth - 1);
    const V other_v = M::shfl_xor(bv[j], M::kWidth - 1);
    const typename M::Bool other_first = M::before(other_k, other_v, wk[NW - 1 - j], wv[NW - 1 - j]);
    wk[NW - 1 - j] = M::sel(other_first, other_k, wk[NW - 1 - j]);
    wv[NW - 1 - j] = M::sel(other_first, other_v, wv[NW - 1 - j]);
  }
  merge_continue_impl<M, 0, NW, true>(wk, wv);
}

}  // namespace quiver::gpu::net
