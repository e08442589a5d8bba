// Run-time choice of the PQ kernels, as select/scan_dispatch.cpp chooses the scan.
#include "cpp/core/simd_level.h"
#include "cpp/quantize/pq_assign.h"
#include "cpp/quantize/pq_scan.h"
#include "cpp/quantize/pq_table_kernels.h"

namespace quiver {

PqScanFn best_pq_scan() {
  static const PqScanFn chosen = [] {
    switch (simd_level()) {
      case SimdLevel::avx512: return pq_scan_avx512;
      case SimdLevel::avx2: return pq_scan_avx2;
      case SimdLevel::portable: break;
    }
    return pq_scan_portable;
  }();
  return chosen;
}

PqAssignFn best_pq_assign() {
  static const PqAssignFn chosen = [] {
    switch (simd_level()) {
      case SimdLevel::avx512: return pq_assign_avx512;
      case SimdLevel::avx2: return pq_assign_avx2;
      case SimdLevel::portable: break;
    }
    return pq_assign_portable;
  }();
  return chosen;
}

PqTableKernels best_pq_table_kernels() {
  static const PqTableKernels chosen = [] {
    switch (simd_level()) {
      case SimdLevel::avx512: return pq_table_kernels_avx512();
      case SimdLevel::avx2: return pq_table_kernels_avx2();
      case SimdLevel::portable: break;
    }
    return pq_table_kernels_portable();
  }();
  return chosen;
}

}  // namespace quiver
