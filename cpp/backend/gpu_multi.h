// What the engine knows of merging several devices' k-NN results on one GPU (cuda/multi/): a sharded
// index whose parts search on GPUs keeps each part's results in device memory and merges them on one
// device, so only the merged results cross to the host (instead of every part's, merged by the CPU).
//
// Errors as in gpu.h.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/metric.h"

namespace quiver::gpu {

// Device memory of one Resources' device for `entries` k-NN results (distances and ids), kept by the
// caller across searches. Throws out_of_device_memory when the device cannot hold it.
class ResultBuffer;
ResultBuffer* result_buffer_create(Resources& resources, int64_t entries);
// nullptr: no-op. No call using the buffer may be running.
void result_buffer_free(ResultBuffer* buffer) noexcept;

struct ResultBufferDeleter {
  void operator()(ResultBuffer* buffer) const noexcept { result_buffer_free(buffer); }
};
using ResultBufferPtr = std::unique_ptr<ResultBuffer, ResultBufferDeleter>;
inline ResultBufferPtr make_result_buffer(Resources& resources, int64_t entries) {
  return ResultBufferPtr(result_buffer_create(resources, entries));
}

int64_t result_buffer_entries(const ResultBuffer& buffer);
// The buffer's device arrays, for a search's outputs.
float* result_distances(ResultBuffer& buffer);
int64_t* result_ids(ResultBuffer& buffer);

// The best k of queries first .. first + nq - 1 over the parts' k-NN lists, merged on `resources`'
// device: parts[p] holds rows of k results, at least first + nq of them (each row closest first by
// distance, missing entries (id -1) last, ids distinct across the parts of a query, as a sharded
// index's are), on any device. Writes distances / ids (nq x k, host or device memory), closest
// first, equal distances by smaller id, missing entries (id -1, the metric's missing distance) last.
// 1 <= parts.size() <= 64. Merges of disjoint rows may run at once on several devices, each pulling
// only its rows over the peer links and copying its own results out.
constexpr int64_t kMaxMergedParts = 64;
void merge_knn(Resources& resources, Metric metric, int64_t first, int64_t nq, int64_t k,
               const std::vector<const ResultBuffer*>& parts, float* distances, int64_t* ids);

}  // namespace quiver::gpu
