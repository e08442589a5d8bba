// k-selection over the rows of distances an IVF scan writes. Each query's row is the concatenation
// of one segment per probed list (the list's entries in slot order, segment lengths = list sizes),
// so its length varies by query; entries are identified by their arena slot, computed from the
// position in the row. The filter (a bitset over slots) is applied here, so k results come back
// whenever k allowed entries were scanned.
//
// Each (row, chunk) is scanned by 1 to 8 warps, each keeping a WarpSelect queue (cuda/select) in
// registers, merged in shared memory (BlockSelect); when rows are few and long, rows are cut into
// chunks selected independently and merged by a second pass (select_rows): the paper's two-pass
// k-selection.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/select/select.h"

namespace quiver::gpu {

struct RowSelectInput {
  const float* dist = nullptr;  // row r at dist + r * row_stride; smaller is closer
  int64_t row_stride = 0;
  const int32_t* lists = nullptr;   // rows x nprobe: the probed lists, in segment order
  int64_t nprobe = 0;
  const int32_t* list_offset = nullptr;  // per list: its first slot
  const int32_t* list_size = nullptr;    // per list
  const uint32_t* slot_filter = nullptr;  // bit s % 32 of word s / 32: slot s allowed; null: all
  int64_t rows = 0;
  int64_t k = 0;  // 1 .. kMaxSelectK
};

// When the selection is the search's last step: the results themselves, written in place of keys
// and slots (one pass only): distances are the keys (L2: plus ||x||^2 computed from `queries` when
// given, clamped at 0; similarities: sign changed), ids slot_ids[slot] (the slot when slot_ids is
// null), missing ones -1 with +inf (L2) or -inf.
struct RowSelectFinal {
  float* distances = nullptr;  // rows x k
  int64_t* ids = nullptr;
  const float* queries = nullptr;  // rows x dim, or null
  int64_t dim = 0;
  bool l2 = true;
  const int64_t* slot_ids = nullptr;
};

struct RowSelectPlan {
  int64_t chunks = 1;
  int64_t chunk_len = 0;
  int warps_per_task = 1;
  int64_t workspace_bytes = 0;
};

// The plan for rows of at most row_bound entries.
RowSelectPlan plan_row_select(const SelectLimits& limits, int64_t rows, int64_t row_bound, int64_t k);

// out_keys / out_slots: rows x k, closest first, ties to the smaller slot; missing entries are
// (+inf, the selection's sentinel slot INT32_MAX). With `final` and a one-pass plan, the results
// are written there instead (and true returned).
bool row_select(const RowSelectInput& input, const RowSelectPlan& plan, const SelectLimits& limits, void* workspace,
                float* out_keys, int32_t* out_slots, cudaStream_t stream, const RowSelectFinal* final = nullptr);

// The second pass of a chunked selection: each row's chunks x k candidates (keys and slots, row r's at
// r * chunks * k) merged into its k best, as row_select's out_keys / out_slots. The workspace is
// merge_chunks_workspace_bytes() bytes.
int64_t merge_chunks_workspace_bytes(const SelectLimits& limits, int64_t rows, int64_t chunks, int64_t k);
void merge_chunks(const float* keys, const int32_t* slots, int64_t rows, int64_t chunks, int64_t k,
                  const SelectLimits& limits, void* workspace, float* out_keys, int32_t* out_slots, cudaStream_t stream);

namespace detail {

struct RowSelectParams {
  RowSelectInput in;
  RowSelectFinal final;  // distances null: write keys and slots
  int64_t chunks;
  int64_t chunk_len;
  int warps_per_task;  // 1, 2, 4 or 8
  float* out_keys;  // (rows * chunks) x k
  int32_t* out_slots;
};

template <int KR, int T>
void launch_row_select(const RowSelectParams& p, cudaStream_t stream);

}  // namespace detail

}  // namespace quiver::gpu
