#include <cstdlib>
#include <cstring>

#include "cpp/select/scan.h"

namespace quiver {

namespace {

struct Choice {
  ScanFn fn;
  const char* name;
};

Choice choose() {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const char* forced = std::getenv("QUIVER_SIMD");
  if (forced && std::strcmp(forced, "portable") == 0) return {scan_portable, "portable"};
  if (forced && std::strcmp(forced, "avx2") == 0 && avx2) return {scan_avx2, "avx2"};
  if (avx512 && !(forced && std::strcmp(forced, "avx2") == 0)) return {scan_avx512, "avx512"};
  if (avx2) return {scan_avx2, "avx2"};
  return {scan_portable, "portable"};
}

const Choice& choice() {
  static const Choice chosen = choose();
  return chosen;
}

}  // namespace

ScanFn best_scan() { return choice().fn; }
const char* best_scan_name() { return choice().name; }

}  // namespace quiver
