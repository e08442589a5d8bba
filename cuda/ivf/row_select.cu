// Planning and dispatch of the row selection (row_select.h).
#include "cuda/ivf/row_select.h"

#include <algorithm>

#include "cpp/core/error.h"
#include "cuda/select/select_buckets.h"

namespace quiver::gpu {

namespace {

using detail::kSelectBuckets;

// Warps in flight that keep the device busy, per multiprocessor.
constexpr int64_t kTargetWarpsPerSm = 16;
constexpr int kMaxWarpsPerTask = 8;
// A warp should scan at least this many positions, a chunk (of up to 8 warps) this many: splitting
// costs a second launch.
constexpr int64_t kMinPerWarp = 256;
constexpr int64_t kMinChunk = 8192;

int64_t align_up(int64_t bytes) { return (bytes + 255) / 256 * 256; }

void launch_bucket(int bucket, const detail::RowSelectParams& p, cudaStream_t stream) {
  using detail::launch_row_select;
  switch (bucket) {
    case 0: return launch_row_select<1, 2>(p, stream);
    case 1: return launch_row_select<2, 3>(p, stream);
    case 2: return launch_row_select<4, 3>(p, stream);
    case 3: return launch_row_select<8, 4>(p, stream);
    case 4: return launch_row_select<16, 6>(p, stream);
    case 5: return launch_row_select<32, 8>(p, stream);
    case 6: return launch_row_select<64, 8>(p, stream);
  }
  fail(Status::internal, "row select: no k bucket ", bucket);
}
static_assert(detail::kSelectBucketCount == 7, "launch_bucket lists every bucket");

}  // namespace

RowSelectPlan plan_row_select(const SelectLimits& limits, int64_t rows, int64_t row_bound, int64_t k) {
  require(k >= 1 && k <= kMaxSelectK, "k = ", k, " is outside 1 .. ", kMaxSelectK);
  RowSelectPlan plan;
  plan.chunk_len = std::max<int64_t>(row_bound, 1);
  const int64_t target = int64_t(limits.sm_count) * kTargetWarpsPerSm;
  if (rows > 0 && rows * kMaxWarpsPerTask < target && row_bound >= 2 * kMinChunk) {
    const int64_t chunks = std::min((target + rows * kMaxWarpsPerTask - 1) / (rows * kMaxWarpsPerTask),
                                    row_bound / kMinChunk);
    if (chunks > 1) {
      plan.chunk_len = ((row_bound + chunks - 1) / chunks + 31) / 32 * 32;
      plan.chunks = (row_bound + plan.chunk_len - 1) / plan.chunk_len;
    }
  }
  while (plan.warps_per_task < kMaxWarpsPerTask && rows * plan.chunks * plan.warps_per_task < target &&
         plan.chunk_len >= 2 * plan.warps_per_task * kMinPerWarp)
    plan.warps_per_task *= 2;
  if (plan.chunks > 1) {
    const int64_t entries = rows * plan.chunks * k;
    plan.workspace_bytes = align_up(entries * 4) * 2 + align_up(merge_chunks_workspace_bytes(limits, rows, plan.chunks, k));
  }
  return plan;
}

bool row_select(const RowSelectInput& input, const RowSelectPlan& plan, const SelectLimits& limits, void* workspace,
                float* out_keys, int32_t* out_slots, cudaStream_t stream, const RowSelectFinal* final) {
  if (input.rows == 0) return final != nullptr && plan.chunks == 1;
  const int bucket = detail::select_bucket(input.k);
  detail::RowSelectParams p{input, RowSelectFinal{}, plan.chunks, plan.chunk_len, plan.warps_per_task, out_keys,
                           out_slots};
  if (plan.chunks == 1) {
    if (final != nullptr) p.final = *final;
    launch_bucket(bucket, p, stream);
    return final != nullptr;
  }
  // Pass 1: every chunk's k best; pass 2: each row's chunks merged.
  const int64_t entries = input.rows * plan.chunks * input.k;
  auto* chunk_keys = static_cast<float*>(workspace);
  auto* chunk_slots = reinterpret_cast<int32_t*>(static_cast<char*>(workspace) + align_up(entries * 4));
  void* merge_workspace = static_cast<char*>(workspace) + 2 * align_up(entries * 4);
  p.out_keys = chunk_keys;
  p.out_slots = chunk_slots;
  launch_bucket(bucket, p, stream);
  merge_chunks(chunk_keys, chunk_slots, input.rows, plan.chunks, input.k, limits, merge_workspace, out_keys, out_slots,
               stream);
  return false;
}

int64_t merge_chunks_workspace_bytes(const SelectLimits& limits, int64_t rows, int64_t chunks, int64_t k) {
  return select_workspace_bytes<int32_t>(limits, rows, chunks * k, k);
}

void merge_chunks(const float* keys, const int32_t* slots, int64_t rows, int64_t chunks, int64_t k,
                  const SelectLimits& limits, void* workspace, float* out_keys, int32_t* out_slots, cudaStream_t stream) {
  SelectRequest<int32_t> merge;
  merge.keys = keys;
  merge.ld = chunks * k;
  merge.rows = rows;
  merge.cols = chunks * k;
  merge.k = k;
  merge.ids = slots;
  merge.out_keys = out_keys;
  merge.out_ids = out_slots;
  merge.keep_missing_as_sentinel = true;
  select_rows(merge, limits, workspace, stream);
}

}  // namespace quiver::gpu
