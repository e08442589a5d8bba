// Selection from distance tiles. A tile row holds alpha * <q, y_j> for a run of database rows j; the
// key of j is that value plus bias[j] (||y_j||^2 for L2, nothing for inner products), and smaller keys
// are better. The scan kernels, one per instruction set, compare whole vectors of keys against the
// sink's threshold and hand only the few that pass to the sink; they are chosen at run time.
#pragma once

#include <cstdint>

namespace quiver {

// Receives the keys below `threshold`. accept() may lower the threshold (k-selection) or not (range
// search); the kernels re-read it after every call. Kept free of templates and inline members so the
// instruction-set-specific files share no code the linker could pick from the wrong file.
struct ScanSink {
  float threshold;
  void (*accept)(ScanSink* self, float key, int64_t index);
};

// For j in [0, n): key = row[j] + (bias ? bias[j] : 0); calls sink->accept(key, first_index + j)
// for each key < sink->threshold, in increasing j.
using ScanFn = void (*)(const float* row, const float* bias, int64_t n, int64_t first_index,
                        ScanSink* sink);

void scan_portable(const float* row, const float* bias, int64_t n, int64_t first_index, ScanSink* sink);
void scan_avx2(const float* row, const float* bias, int64_t n, int64_t first_index, ScanSink* sink);
void scan_avx512(const float* row, const float* bias, int64_t n, int64_t first_index, ScanSink* sink);

// The best kernel this processor runs (core/simd_level.h: AVX-512, AVX2, portable; QUIVER_SIMD in
// the environment narrows the choice, for tests and comparisons).
ScanFn best_scan();

}  // namespace quiver
