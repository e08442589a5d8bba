#include "cpp/core/simd_level.h"

#include <cstdlib>
#include <cstring>

namespace quiver {

namespace {

SimdLevel detect() {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  SimdLevel level = avx512 ? SimdLevel::avx512 : avx2 ? SimdLevel::avx2 : SimdLevel::portable;
  const char* forced = std::getenv("QUIVER_SIMD");
  if (forced && std::strcmp(forced, "portable") == 0) level = SimdLevel::portable;
  if (forced && std::strcmp(forced, "avx2") == 0 && level == SimdLevel::avx512) level = SimdLevel::avx2;
  return level;
}

}  // namespace

SimdLevel simd_level() {
  static const SimdLevel level = detect();
  return level;
}

}  // namespace quiver
