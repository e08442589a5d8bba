// The GPU lane model of network.h: each value is one lane's register, cross-lane moves are warp
// shuffles and votes over the full warp.
#pragma once

#include <cstdint>

namespace quiver::gpu {

constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kWarpSize = 32;

// kRolled: keep the shuffle stages of the networks in loops (network.h), for large queues.
template <typename V, bool kRolledLoops = false>
struct WarpLanes {
  static constexpr int kWidth = kWarpSize;
  static constexpr bool kRolled = kRolledLoops;
  using Key = float;
  using Val = V;
  using RawVal = V;
  using Bool = bool;
  using Int = int;

  // (a, av) orders before (b, bv): smaller key, then smaller value.
  static __device__ __forceinline__ bool before(float a, V av, float b, V bv) {
    return a < b || (a == b && av < bv);
  }
  static __device__ __forceinline__ float sel(bool c, float a, float b) { return c ? a : b; }
  static __device__ __forceinline__ V sel(bool c, V a, V b) { return c ? a : b; }
  static __device__ __forceinline__ float shfl_xor(float x, int mask) {
    return __shfl_xor_sync(kFullWarp, x, mask);
  }
  static __device__ __forceinline__ V shfl_xor(V x, int mask) {
    if constexpr (sizeof(V) == 8) {  // two 32-bit shuffles, without a trip through local memory
      const int lo = __shfl_xor_sync(kFullWarp, static_cast<int>(x), mask);
      const int hi = __shfl_xor_sync(kFullWarp, static_cast<int>(x >> 32), mask);
      return static_cast<V>((static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32) | static_cast<uint32_t>(lo));
    } else {
      return __shfl_xor_sync(kFullWarp, x, mask);
    }
  }
  static __device__ __forceinline__ float broadcast(float x, int lane) { return __shfl_sync(kFullWarp, x, lane); }
  static __device__ __forceinline__ V broadcast(V x, int lane) {
    if constexpr (sizeof(V) == 8) {
      const int lo = __shfl_sync(kFullWarp, static_cast<int>(x), lane);
      const int hi = __shfl_sync(kFullWarp, static_cast<int>(x >> 32), lane);
      return static_cast<V>((static_cast<uint64_t>(static_cast<uint32_t>(hi)) << 32) | static_cast<uint32_t>(lo));
    } else {
      return __shfl_sync(kFullWarp, x, lane);
    }
  }
  // A select the compiler cannot see through: a loop of `r == i ? reg[r] : x` over an array would
  // otherwise become reg[i], a run-time index that moves the whole array to local memory.
  static __device__ __forceinline__ float pick(bool c, float a, float b) {
    float out;
    asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %1, 0;\n\tselp.f32 %0, %2, %3, p;\n\t}"
        : "=f"(out) : "r"(int(c)), "f"(a), "f"(b));
    return out;
  }
  static __device__ __forceinline__ V pick(bool c, V a, V b) {
    if constexpr (sizeof(V) == 8) {
      long long out;
      asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %1, 0;\n\tselp.b64 %0, %2, %3, p;\n\t}"
          : "=l"(out) : "r"(int(c)), "l"(static_cast<long long>(a)), "l"(static_cast<long long>(b)));
      return static_cast<V>(out);
    } else {
      int out;
      asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %1, 0;\n\tselp.b32 %0, %2, %3, p;\n\t}"
          : "=r"(out) : "r"(int(c)), "r"(static_cast<int>(a)), "r"(static_cast<int>(b)));
      return static_cast<V>(out);
    }
  }
  static __device__ __forceinline__ bool same(bool a, bool b) { return a == b; }
  static __device__ __forceinline__ int lane() { return static_cast<int>(threadIdx.x) & (kWarpSize - 1); }
  // Whether this lane is the lower one of the pair (lane, lane ^ mask).
  static __device__ __forceinline__ bool lower_lane(int mask) { return lane() < (lane() ^ mask); }
  static __device__ __forceinline__ bool any(bool b) { return __any_sync(kFullWarp, b); }
  static __device__ __forceinline__ float splat_key(float x) { return x; }
  static __device__ __forceinline__ V splat_val(V x) { return x; }
  static __device__ __forceinline__ int splat_int(int x) { return x; }
  static __device__ __forceinline__ int add_if(int c, bool b) { return c + (b ? 1 : 0); }
  static __device__ __forceinline__ bool equals(int c, int x) { return c == x; }
  static __device__ __forceinline__ bool positive(int c) { return c > 0; }
};

}  // namespace quiver::gpu
