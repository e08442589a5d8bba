// Between the selection planner (select.cu) and the per-bucket kernels (select_k*.cu): the kernel's
// parameters and the launcher each bucket file instantiates.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu::detail {

// Threads per block: 4 rows of one warp each (WarpSelect), or one row of up to 8 warps (BlockSelect).
constexpr int kSelectMaxThreads = 256;
constexpr int kSelectRowsPerBlock = 4;
constexpr int kSelectMaxWarpsPerRow = 8;

template <typename V>
struct SelectParams {
  const float* keys;
  const void* keys16;  // 2-byte keys (fp16 when !bf16 keys), or nullptr: float keys
  bool bf16_keys;
  int64_t ld;
  int64_t cols;
  int64_t k;
  int64_t tasks;      // rows * chunks; task t is chunk t % chunks of row t / chunks
  int64_t chunks;     // per row
  int64_t chunk_len;  // columns per chunk, a multiple of 4
  int warps_per_row;  // 1 (WarpSelect) or a power of two up to 8 (BlockSelect)
  bool vec4;          // keys (and bias) rows are 16-byte aligned: load float4
  float in_scale;     // key = in_scale * x + bias[c]
  const float* bias;
  const V* ids;  // row stride ld; nullptr: id_base + c
  int64_t id_base;
  float prev_scale;  // prev key in the kernel's order = prev_scale * prev_keys[..]
  const float* prev_keys;
  const V* prev_ids;
  const uint8_t* filter;
  int64_t filter_bits;
  float out_scale;  // written key = out_scale * key
  bool missing_minus_one;
  float* out_keys;  // tasks x k
  V* out_ids;
  // Threshold pre-filter (select_prefilter.h): per task row, a threshold t (select_sample.h) that
  // seeds the limit, so only keys at or below it are offered; a task that then finds fewer than k
  // such keys appends its row to redo_rows (count in *redo_count) instead of writing its result.
  // nullptr: off. Only with one warp and one chunk a row and no previous result (select.cu decides).
  const float* seeds;
  int32_t* redo_count;
  int32_t* redo_rows;
  // The selection of those rows again: task t is row task_rows[t], for t < *task_count (tasks is
  // then only a bound). nullptr: task t is row t.
  const int32_t* task_rows;
  const int32_t* task_count;
  // 16-bit keys with a bias: per slot of 8 columns (index column / 8 of the row), a lower bound of
  // the bias over them (select_bias_bound.h), so a group of keys is rejected before its bias is read.
  // nullptr: none (the bias is then read for every group).
  const float* bias_bound;
};

template <int KR, int T, typename V>
void launch_select(const SelectParams<V>& p, cudaStream_t stream);

}  // namespace quiver::gpu::detail
