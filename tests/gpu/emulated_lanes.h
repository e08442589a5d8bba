// A CPU model of a warp for cuda/select/network.h and warp_select.h: each value holds all W lanes, a
// shuffle permutes them, a vote reduces them. The networks run here exactly as written for the GPU,
// with any width W (W = 4 makes exhaustive 0-1 tests of the networks affordable).
#pragma once

#include <array>

namespace quiver::testing {

template <typename T, int W>
struct Lanes {
  std::array<T, W> at{};
};

template <typename V, int W, bool kRolledLoops = false>
struct EmulatedLanes {
  static constexpr int kWidth = W;
  static constexpr bool kRolled = kRolledLoops;
  using Key = Lanes<float, W>;
  using Val = Lanes<V, W>;
  using Bool = Lanes<bool, W>;
  using Int = Lanes<int, W>;
  using RawVal = V;

  template <typename F>
  static Bool each(F f) {
    Bool out;
    for (int l = 0; l < W; ++l) out.at[l] = f(l);
    return out;
  }
  static Bool before(const Key& a, const Val& av, const Key& b, const Val& bv) {
    return each([&](int l) { return a.at[l] < b.at[l] || (a.at[l] == b.at[l] && av.at[l] < bv.at[l]); });
  }
  template <typename T>
  static Lanes<T, W> sel(const Bool& c, const Lanes<T, W>& a, const Lanes<T, W>& b) {
    Lanes<T, W> out;
    for (int l = 0; l < W; ++l) out.at[l] = c.at[l] ? a.at[l] : b.at[l];
    return out;
  }
  template <typename T>
  static Lanes<T, W> shfl_xor(const Lanes<T, W>& x, int mask) {
    Lanes<T, W> out;
    for (int l = 0; l < W; ++l) out.at[l] = x.at[l ^ mask];
    return out;
  }
  template <typename T>
  static Lanes<T, W> broadcast(const Lanes<T, W>& x, int lane) {
    Lanes<T, W> out;
    out.at.fill(x.at[lane]);
    return out;
  }
  // A whole-warp select by a condition that is the same in every lane.
  template <typename T>
  static Lanes<T, W> pick(bool c, const Lanes<T, W>& a, const Lanes<T, W>& b) {
    return c ? a : b;
  }
  static Bool same(const Bool& a, const Bool& b) {
    return each([&](int l) { return a.at[l] == b.at[l]; });
  }
  static Bool lower_lane(int mask) {
    return each([&](int l) { return l < (l ^ mask); });
  }
  static bool any(const Bool& b) {
    for (int l = 0; l < W; ++l)
      if (b.at[l]) return true;
    return false;
  }
  static Key splat_key(float x) {
    Key out;
    out.at.fill(x);
    return out;
  }
  static Val splat_val(V x) {
    Val out;
    out.at.fill(x);
    return out;
  }
  static Int splat_int(int x) {
    Int out;
    out.at.fill(x);
    return out;
  }
  static Int add_if(const Int& c, const Bool& b) {
    Int out;
    for (int l = 0; l < W; ++l) out.at[l] = c.at[l] + (b.at[l] ? 1 : 0);
    return out;
  }
  static Bool equals(const Int& c, int x) {
    return each([&](int l) { return c.at[l] == x; });
  }
  static Bool positive(const Int& c) {
    return each([&](int l) { return c.at[l] > 0; });
  }
};

}  // namespace quiver::testing
