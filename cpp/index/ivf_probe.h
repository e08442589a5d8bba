// Pieces every CPU inverted-file search shares: the coarse quantization of query batches, entries
// named by (list, offset) for the k-selection, and writing the final results.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cpp/core/metric.h"
#include "cpp/index/ivf_model.h"
#include "cpp/select/topk.h"

namespace quiver {

// An entry as the k-selection indexes it: its list in the high 32 bits, its offset in the low ones
// (lists hold at most kMaxListSize entries), so ties go to the smaller list, then the smaller offset.
inline int64_t encode_entry(int64_t list, int64_t offset) { return (list << 32) | offset; }
inline int64_t entry_list(int64_t entry) { return entry >> 32; }
inline int64_t entry_offset(int64_t entry) { return entry & 0xFFFFFFFF; }

// Sorts `found` (key: smaller is closer; index: the entry's id) and writes the best k: distances in
// the metric's units (key for L2, -key for inner product), ids, ties to the smaller id; rows padded
// with missing_distance and -1.
void write_results(Metric metric, std::vector<Candidate>& found, int64_t k, float* distances, int64_t* ids);

// Coarse quantization of nq queries (model space) in batches whose probe lists stay small; calls
// visit(first, count, coarse_distances, probes) per batch, probes and coarse_distances count x nprobe
// (nearest list first, squared L2 to the centroid).
void for_each_probe_batch(
    ThreadPool& pool, const IvfModel& model, int64_t nq, const float* queries, int64_t nprobe,
    const std::function<void(int64_t first, int64_t count, const float* coarse_distances, const int64_t* probes)>&
        visit);

}  // namespace quiver
