#include "cpp/core/simd_level.h"
#include "cpp/select/scan.h"

namespace quiver {

ScanFn best_scan() {
  static const ScanFn chosen = [] {
    switch (simd_level()) {
      case SimdLevel::avx512: return scan_avx512;
      case SimdLevel::avx2: return scan_avx2;
      case SimdLevel::portable: break;
    }
    return scan_portable;
  }();
  return chosen;
}

}  // namespace quiver
