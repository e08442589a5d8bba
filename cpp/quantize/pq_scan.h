// Scanning a run of PQ codes with a look-up table: the inner loop of IVF-PQ search on the CPU. The
// keys go to a ScanSink (select/scan.h), so they feed the same k-selection or range collection as the
// exact scans. One kernel per instruction set, chosen at run time; all of them compute every key with
// the same additions in the same order, so they hand the sink bit-identical keys.
#pragma once

#include <cstdint>

#include "cpp/select/scan.h"

namespace quiver {

// For j in [0, n): key = bias + table[0 * 256 + c_0] + table[1 * 256 + c_1] + ... + table[(m - 1) * 256 +
// c_{m-1}], summed left to right in float, where c = codes + j * m (n x m bytes, row-major); calls
// sink->accept(sink, key, first_index + j) for each key < sink->threshold, in increasing j,
// re-reading the threshold after every accept. table: m x 256 floats. m >= 1.
using PqScanFn = void (*)(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias,
                          int64_t first_index, ScanSink* sink);

void pq_scan_portable(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias,
                      int64_t first_index, ScanSink* sink);
// The sums are table look-ups, one load each, and no instruction set has a faster look-up than a
// scalar load: AVX-512 and AVX2 gathers were slower on AMD Zen 4 than scalar loads of
// a few codes side by side (measured with bench/cpu/pq_scan_bench.cpp: 1.6-2x). So the kernels below sum in scalar
// registers and use the vector unit only to compare a block of keys with the threshold at once.
// Callable only where the processor has AVX2 and FMA.
void pq_scan_avx2(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias,
                  int64_t first_index, ScanSink* sink);
// Callable only where the processor has AVX-512 F, BW, DQ and VL.
void pq_scan_avx512(const uint8_t* codes, int64_t n, int64_t m, const float* table, float bias,
                    int64_t first_index, ScanSink* sink);

// The best kernel this processor runs (core/simd_level.h; QUIVER_SIMD narrows the choice).
PqScanFn best_pq_scan();

}  // namespace quiver
