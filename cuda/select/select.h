// Row-wise k-selection on the GPU: for each row of a rows x cols matrix of keys in device memory,
// the k smallest (or largest) keys with their ids, sorted, ties to the smaller id. This is what the
// exact search (cuda/flat) and the benchmarks use; the engine reaches it only through gpu.h.
//
// One kernel serves both of the paper's selections: with one warp per row it is WarpSelect; with
// several warps per row (when rows are few and long) it is BlockSelect, the warps' queues merged
// through shared memory at the end. When even that leaves the GPU idle (few rows), each row is also
// split into chunks selected independently, and a second pass merges the chunks' results.
//
// Long rows of many rows first take a threshold from a sample of each row, and offer only keys at or
// below it (select_prefilter.h); 16-bit keys with a bias reject groups of keys by a bound of the bias
// taken once per call (select_bias_bound.h). Neither changes a result. Short rows of float keys of
// which k is a large share take one block a row and a radix selection instead (select_dense.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace quiver::gpu {

// The largest k served (QV_MAX_K).
constexpr int64_t kMaxSelectK = 2048;

// What the plan needs to know of the device.
struct SelectLimits {
  int sm_count = 132;
  int max_shared_bytes = 227 * 1024;  // per block, with the opt-in above 48 KB
  int compute_capability = 90;        // major * 10 + minor
};

// How the keys are stored: floats, or 16-bit values (the half-precision distance tiles of the fast
// exact-search modes: half the bytes to write and to read).
enum class KeyFormat { f32, f16, bf16 };

// V: int32_t or int64_t ids. All pointers are device memory.
template <typename V>
struct SelectRequest {
  const float* keys = nullptr;  // rows x cols, row stride ld (>= cols)
  int64_t ld = 0;
  // f16 / bf16: the keys are the 2-byte values at keys16 (keys unused), read as key_scale * value;
  // int32_t ids only; keys16 16-byte aligned and ld a multiple of 8.
  KeyFormat key_format = KeyFormat::f32;
  const void* keys16 = nullptr;
  float key_scale = 1.f;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t k = 0;         // 1 .. kMaxSelectK; may exceed cols (the rest is padding)
  bool largest = false;  // select the largest keys, closest first = largest first

  // Each pair offered is (keys[r][c] + column_bias[c], id); column_bias may be nullptr. A bias is
  // added before the direction applies, so with `largest` it is subtracted.
  const float* column_bias = nullptr;
  // ids[r][c] (row stride ld), or nullptr for id = id_base + c.
  const V* ids = nullptr;
  int64_t id_base = 0;
  // Optional previous result to continue from: rows x k keys and ids (the layout of out_keys and
  // out_ids, written by an earlier call with the same k and direction, missing ids as the sentinel,
  // so keep_missing_as_sentinel must have been set). May be the same memory as out_keys / out_ids.
  const float* prev_keys = nullptr;
  const V* prev_ids = nullptr;
  // Optional filter over ids: bit (id % 8) of filter[id / 8]; ids at or beyond filter_bits excluded.
  const uint8_t* filter = nullptr;
  int64_t filter_bits = 0;

  float* out_keys = nullptr;  // rows x k, sorted closest first; padding +inf (-inf when largest)
  V* out_ids = nullptr;       // rows x k; padding -1
  // Keep padding ids as the internal sentinel (largest V) instead of -1, so the result can be
  // passed back as prev_keys / prev_ids.
  bool keep_missing_as_sentinel = false;
};

// The plain request: the k smallest of each of `rows` rows of `cols` float keys (row stride cols, ids
// the columns) into out_keys / out_ids; the other fields as above. Callers set more on the result.
template <typename V>
SelectRequest<V> select_request(const float* keys, int64_t rows, int64_t cols, int64_t k, float* out_keys,
                                V* out_ids) {
  SelectRequest<V> r;
  r.keys = keys;
  r.ld = cols;
  r.rows = rows;
  r.cols = cols;
  r.k = k;
  r.out_keys = out_keys;
  r.out_ids = out_ids;
  return r;
}

// Device workspace select_rows needs for this shape: the second pass's inputs when rows are split,
// room for the bounds of a 16-bit key path's bias (int32 ids, rows of 1024 columns or more) and for
// the pre-filter's thresholds (long rows, many of them); 0 when none applies. A caller selecting
// several shapes with one workspace sizes it for each and takes the largest. Without a workspace
// (nullptr, for a shape that needs none but these), the selection is the same, only slower.
template <typename V>
int64_t select_workspace_bytes(const SelectLimits& limits, int64_t rows, int64_t cols, int64_t k);

// Enqueues the selection on `stream`. workspace: select_workspace_bytes() bytes of device memory
// (nullptr when that is 0), not used by anything else until the stream has run the selection.
// Throws invalid_argument for a bad request, cuda_error for a launch failure.
template <typename V>
void select_rows(const SelectRequest<V>& request, const SelectLimits& limits, void* workspace,
                 cudaStream_t stream);

// Whether rows that fit the dense selection take it (default true). For benchmarks and tests, which
// compare it with the warp queues; not meant to change while a selection is being enqueued.
void set_dense_select_enabled(bool on);

}  // namespace quiver::gpu
