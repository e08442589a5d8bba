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
};

template <int KR, int T, typename V>
void launch_select(const SelectParams<V>& p, cudaStream_t stream);

}  // namespace quiver::gpu::detail
