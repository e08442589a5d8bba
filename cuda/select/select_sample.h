// The pre-filter's thresholds (select_prefilter.h): for each row, the rank-th smallest key as the
// selection ranks it (in_scale * value + bias) of kSampleKeys keys in kSampleRuns runs of kSampleRun
// columns spread evenly over the row. NaN keys are left out, as the selection leaves them out; +inf
// when the sample has fewer than rank keys (the selection then runs unseeded).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu::detail {

struct SampleRequest {
  const float* keys;    // float keys, or nullptr when keys16 is set
  const void* keys16;   // 16-bit keys: fp16, or bf16 when bf16
  bool bf16;
  int64_t ld;
  int64_t rows;
  int64_t cols;         // >= kSampleRun
  const float* bias;    // per column, or nullptr
  float in_scale;
  int rank;             // 1 .. kSampleMaxRank
  float* thresholds;    // rows
  int32_t* zero;        // set to 0 by the launch (the selection's redo count), or nullptr
};

void launch_sample_thresholds(const SampleRequest& r, cudaStream_t stream);

}  // namespace quiver::gpu::detail
