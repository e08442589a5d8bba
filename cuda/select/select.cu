// Planning and dispatch of the selection kernels (select.h).
#include "cuda/select/select.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "cpp/core/error.h"
#include "cuda/select/select_bias_bound.h"
#include "cuda/select/select_buckets.h"
#include "cuda/select/select_dense.h"
#include "cuda/select/select_launch.h"
#include "cuda/select/select_prefilter.h"
#include "cuda/select/select_sample.h"

namespace quiver::gpu {

namespace {

using detail::kSelectBuckets;
using detail::kSelectMaxWarpsPerRow;

// Warps in flight that keep the memory system busy: about 24 per multiprocessor (of 64).
constexpr int kTargetWarpsPerSm = 24;
// A warp should scan several times its queue, or merging the warps' queues costs more than it saves.
constexpr int64_t kMinColumnsPerWarpPerK = 4;
// Large queues (k_cap >= kLargeQueue) merge through long register networks: a warp that scans only
// a few times its queue admits a large share of its keys (k (1 + ln(cols / k)) of cols) and spends
// its time merging. Measured: k = 2048 on 512 rows of 131072 columns split over 8 warps a row took
// 4-8x the time of one warp a row (exact search, k = 1024: 375 -> 86 ms).
constexpr int64_t kLargeQueue = 512;
constexpr int64_t kMinColumnsPerWarpPerLargeK = 32;

int64_t min_columns_per_warp(int64_t k_cap) {
  return k_cap * (k_cap >= kLargeQueue ? kMinColumnsPerWarpPerLargeK : kMinColumnsPerWarpPerK);
}
// Chunk lengths are multiples of this (the 16-byte slots of 32 lanes), so chunks stay aligned.
constexpr int64_t kChunkAlign = 128;

std::atomic<bool> dense_select_on{true};

struct Plan {
  int bucket;
  int warps_per_row;
  int64_t chunks;
  int64_t chunk_len;
  int merge_warps_per_row;  // second pass, when chunks > 1
};

template <typename V>
int max_warps_for_shared(const SelectLimits& limits, int bucket) {
  const int64_t per_warp = int64_t(kSelectBuckets[bucket].k) * int64_t(sizeof(float) + sizeof(V));
  return static_cast<int>(std::max<int64_t>(1, limits.max_shared_bytes / per_warp));
}

// Warps per row for `tasks` rows of `cols` columns: more when there are few rows, as long as each
// warp keeps enough columns.
template <typename V>
int warps_per_row(const SelectLimits& limits, int bucket, int64_t tasks, int64_t cols) {
  const int64_t target = int64_t(limits.sm_count) * kTargetWarpsPerSm;
  const int64_t k_cap = kSelectBuckets[bucket].k;
  const int shared_cap = max_warps_for_shared<V>(limits, bucket);
  int w = 1;
  while (w * 2 <= kSelectMaxWarpsPerRow && w * 2 <= shared_cap && tasks * w < target &&
         cols >= int64_t(w) * 2 * min_columns_per_warp(k_cap))
    w *= 2;
  return w;
}

template <typename V>
Plan make_plan(const SelectLimits& limits, int64_t rows, int64_t cols, int64_t k) {
  Plan plan{};
  plan.bucket = detail::select_bucket(k);
  const int64_t k_cap = kSelectBuckets[plan.bucket].k;
  const int64_t target = int64_t(limits.sm_count) * kTargetWarpsPerSm;
  plan.chunks = 1;
  plan.chunk_len = std::max<int64_t>(cols, 1);
  // Too few rows even with the most warps per row: split rows into chunks, merged by a second pass.
  // Every chunk's k best go through the merge: beyond about sqrt(cols / k) chunks a row, the merge's
  // row (chunks x k) is longer than a chunk and costs more than the chunks' parallelism saves
  // (measured on one row of 1M keys, k = 32: 2 605 chunks took 32 us, their merge 59 us).
  if (rows * kSelectMaxWarpsPerRow < target && cols >= 2 * min_columns_per_warp(k_cap) * 2) {
    const int64_t wanted = (target + rows - 1) / rows;
    const int64_t most = cols / (2 * min_columns_per_warp(k_cap));  // chunks of >= 2 min_columns_per_warp
    const auto balanced = static_cast<int64_t>(std::sqrt(double(cols) / double(k_cap)));
    const int64_t chunks = std::max<int64_t>(1, std::min({wanted, most, balanced}));
    if (chunks > 1) {
      const int64_t len = (cols + chunks - 1) / chunks;
      plan.chunk_len = (len + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
      plan.chunks = (cols + plan.chunk_len - 1) / plan.chunk_len;
    }
  }
  plan.warps_per_row = warps_per_row<V>(limits, plan.bucket, rows * plan.chunks,
                                        std::min(cols, plan.chunk_len));
  plan.merge_warps_per_row =
      plan.chunks > 1 ? warps_per_row<V>(limits, plan.bucket, rows, plan.chunks * k) : 1;
  return plan;
}

template <typename V>
void launch_bucket(int bucket, const detail::SelectParams<V>& p, cudaStream_t stream) {
  using detail::launch_select;
  switch (bucket) {
    case 0: return launch_select<1, 2, V>(p, stream);
    case 1: return launch_select<2, 3, V>(p, stream);
    case 2: return launch_select<4, 3, V>(p, stream);
    case 3: return launch_select<8, 4, V>(p, stream);
    case 4: return launch_select<16, 6, V>(p, stream);
    case 5: return launch_select<32, 8, V>(p, stream);
    case 6: return launch_select<64, 8, V>(p, stream);
  }
  fail(Status::internal, "select: no k bucket ", bucket);
}
static_assert(detail::kSelectBucketCount == 7, "launch_bucket lists every bucket");

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

int64_t align_up(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// The second pass's inputs (every chunk's k best), at the workspace's start; 0 with one chunk a row.
template <typename V>
int64_t chunk_bytes(const Plan& plan, int64_t rows, int64_t k) {
  if (plan.chunks == 1) return 0;
  const int64_t entries = rows * plan.chunks * k;
  return align_up(entries * int64_t(sizeof(float))) + align_up(entries * int64_t(sizeof(V)));
}

// The bias bounds of 16-bit keys (select_bias_bound.h), after the chunks' results: only int32 ids
// take 16-bit keys, and short rows keep reading their bias.
template <typename V>
int64_t bias_bound_bytes(int64_t cols) {
  if (sizeof(V) != sizeof(int32_t) || cols < detail::kBiasBoundMinCols) return 0;
  return align_up(detail::bias_bound_count(cols) * int64_t(sizeof(float)));
}

// The threshold pre-filter (select_prefilter.h) serves long rows with one warp and one chunk a row
// (many rows); its thresholds (a float a row) follow the bias bounds in the workspace.
template <typename V>
bool prefilter_shape(const Plan& plan, int64_t rows, int64_t cols, int64_t k) {
  const int64_t k_cap = kSelectBuckets[plan.bucket].k;
  return plan.chunks == 1 && plan.warps_per_row == 1 && rows > 0 && k > detail::kPrefilterMinK &&
         k <= detail::kPrefilterMaxK && cols >= detail::kPrefilterMinCols &&
         cols >= detail::kPrefilterMinColsPerK * k_cap;
}

// Thresholds (a float a row), then the rows to select again (a count, then up to `rows` rows).
template <typename V>
int64_t prefilter_bytes(const Plan& plan, int64_t rows, int64_t cols, int64_t k) {
  if (!prefilter_shape<V>(plan, rows, cols, k)) return 0;
  return align_up(rows * int64_t(sizeof(float))) + align_up((rows + 1) * int64_t(sizeof(int32_t)));
}

// Also nothing to continue from (the previous k-th key is already a threshold) and no filter (one
// that drops most keys would make the sample's threshold too low and every row run twice).
template <typename V>
bool prefilter_applies(const Plan& plan, const SelectRequest<V>& r) {
  return prefilter_shape<V>(plan, r.rows, r.cols, r.k) && r.prev_keys == nullptr && r.filter == nullptr;
}

}  // namespace

template <typename V>
int64_t select_workspace_bytes(const SelectLimits& limits, int64_t rows, int64_t cols, int64_t k) {
  require(k >= 1 && k <= kMaxSelectK, "k = ", k, " is outside 1 .. ", kMaxSelectK);
  const Plan plan = make_plan<V>(limits, rows, cols, k);
  return chunk_bytes<V>(plan, rows, k) + bias_bound_bytes<V>(cols) + prefilter_bytes<V>(plan, rows, cols, k);
}

template <typename V>
void select_rows(const SelectRequest<V>& r, const SelectLimits& limits, void* workspace,
                 cudaStream_t stream) {
  require(r.k >= 1 && r.k <= kMaxSelectK, "k = ", r.k, " is outside 1 .. ", kMaxSelectK);
  require(r.rows >= 0 && r.cols >= 0, "select: negative shape ", r.rows, " x ", r.cols);
  require(r.cols == 0 || r.ld >= r.cols, "select: ld = ", r.ld, " is below cols = ", r.cols);
  require(r.cols < (int64_t(1) << 31) - 4 * 1024, "select: cols = ", r.cols, " is beyond 2^31 - 4096");
  require(r.out_keys != nullptr && r.out_ids != nullptr, "select: no output");
  require((r.prev_keys == nullptr) == (r.prev_ids == nullptr), "select: prev_keys and prev_ids go together");
  const bool key16 = r.key_format != KeyFormat::f32;
  if (key16) {
    require(sizeof(V) == sizeof(int32_t), "select: 16-bit keys take int32 ids");
    require(r.rows == 0 || r.cols == 0 || r.keys16 != nullptr, "select: 16-bit keys and no keys16");
    require(aligned16(r.keys16) && r.ld % 8 == 0 && (r.column_bias == nullptr || aligned16(r.column_bias)),
            "select: 16-bit keys need 16-byte aligned rows (ld = ", r.ld, ")");
  }
  if (r.rows == 0) return;
  const Plan plan = make_plan<V>(limits, r.rows, r.cols, r.k);
  const float scale = r.largest ? -1.f : 1.f;

  detail::SelectParams<V> p{};
  p.keys = r.keys;
  p.keys16 = key16 ? r.keys16 : nullptr;
  p.bf16_keys = r.key_format == KeyFormat::bf16;
  p.ld = r.ld;
  p.cols = r.cols;
  p.k = r.k;
  p.tasks = r.rows * plan.chunks;
  p.chunks = plan.chunks;
  p.chunk_len = plan.chunk_len;
  p.warps_per_row = plan.warps_per_row;
  p.vec4 = r.ld % 4 == 0 && aligned16(r.keys) && (r.column_bias == nullptr || aligned16(r.column_bias));
  p.in_scale = key16 ? scale * r.key_scale : scale;
  p.bias = r.column_bias;
  p.ids = r.ids;
  p.id_base = r.id_base;
  p.filter = r.filter;
  p.filter_bits = r.filter_bits;
  p.prev_scale = scale;
  // 16-bit keys with a bias: the bias's bounds, if the caller gave the workspace for them.
  if (key16 && r.column_bias != nullptr && workspace != nullptr && bias_bound_bytes<V>(r.cols) > 0) {
    auto* bound = reinterpret_cast<float*>(static_cast<char*>(workspace) + chunk_bytes<V>(plan, r.rows, r.k));
    detail::launch_bias_bound(r.column_bias, r.cols, bound, stream);
    p.bias_bound = bound;
  }

  const bool dense =
      !key16 && dense_select_on.load(std::memory_order_relaxed) && detail::dense_select_fits(r.cols, r.k);
  if (plan.chunks == 1 || dense) {
    p.prev_keys = r.prev_keys;
    p.prev_ids = r.prev_ids;
    p.out_scale = scale;
    p.missing_minus_one = !r.keep_missing_as_sentinel;
    p.out_keys = r.out_keys;
    p.out_ids = r.out_ids;
    if (dense) {
      detail::launch_dense_select(p, r.rows, stream);
      return;
    }
    if (workspace != nullptr && prefilter_applies<V>(plan, r)) {
      char* at = static_cast<char*>(workspace) + chunk_bytes<V>(plan, r.rows, r.k) + bias_bound_bytes<V>(r.cols);
      auto* seeds = reinterpret_cast<float*>(at);
      auto* redo = reinterpret_cast<int32_t*>(at + align_up(r.rows * int64_t(sizeof(float))));
      detail::SampleRequest s{};
      s.keys = key16 ? nullptr : r.keys;
      s.keys16 = key16 ? r.keys16 : nullptr;
      s.bf16 = r.key_format == KeyFormat::bf16;
      s.ld = r.ld;
      s.rows = r.rows;
      s.cols = r.cols;
      s.bias = r.column_bias;
      s.in_scale = p.in_scale;
      s.rank = detail::prefilter_rank(r.cols, r.k);
      s.thresholds = seeds;
      s.zero = redo;
      detail::launch_sample_thresholds(s, stream);
      p.seeds = seeds;
      p.redo_count = redo;
      p.redo_rows = redo + 1;
      launch_bucket<V>(plan.bucket, p, stream);
      // The rows whose threshold kept fewer than k keys, again without it (usually none: the
      // launch reads a count of 0 and ends). Few rows: more warps a row.
      detail::SelectParams<V> again = p;
      again.seeds = nullptr;
      again.redo_count = nullptr;
      again.redo_rows = nullptr;
      again.task_rows = redo + 1;
      again.task_count = redo;
      again.warps_per_row = warps_per_row<V>(limits, plan.bucket, 1, r.cols);
      launch_bucket<V>(plan.bucket, again, stream);
      return;
    }
    launch_bucket<V>(plan.bucket, p, stream);
    return;
  }

  // Pass 1: every chunk's k best, in the kernel's order (smallest first), sentinels kept.
  require(workspace != nullptr, "select: this shape needs a workspace");
  const int64_t entries = r.rows * plan.chunks * r.k;
  auto* chunk_keys = static_cast<float*>(workspace);
  auto* chunk_ids = reinterpret_cast<V*>(static_cast<char*>(workspace) + align_up(entries * int64_t(sizeof(float))));
  p.prev_keys = nullptr;
  p.prev_ids = nullptr;
  p.out_scale = 1.f;
  p.missing_minus_one = false;
  p.out_keys = chunk_keys;
  p.out_ids = chunk_ids;
  launch_bucket<V>(plan.bucket, p, stream);

  // Pass 2: each row's chunks (plus the previous result) merged.
  detail::SelectParams<V> m = p;
  m.keys = chunk_keys;
  m.keys16 = nullptr;
  m.ld = plan.chunks * r.k;
  m.cols = plan.chunks * r.k;
  m.tasks = r.rows;
  m.chunks = 1;
  m.chunk_len = m.cols;
  m.warps_per_row = plan.merge_warps_per_row;
  m.vec4 = m.ld % 4 == 0;  // the workspace is 256-byte aligned
  m.in_scale = 1.f;
  m.bias = nullptr;
  m.ids = chunk_ids;
  m.id_base = 0;
  m.bias_bound = nullptr;
  m.seeds = nullptr;  // (pass 1 is never pre-filtered: its plan has chunks)
  m.filter = nullptr;  // applied in pass 1
  m.filter_bits = 0;
  m.prev_scale = scale;
  m.prev_keys = r.prev_keys;
  m.prev_ids = r.prev_ids;
  m.out_scale = scale;
  m.missing_minus_one = !r.keep_missing_as_sentinel;
  m.out_keys = r.out_keys;
  m.out_ids = r.out_ids;
  launch_bucket<V>(plan.bucket, m, stream);
}

void set_dense_select_enabled(bool on) { dense_select_on.store(on, std::memory_order_relaxed); }

template int64_t select_workspace_bytes<int32_t>(const SelectLimits&, int64_t, int64_t, int64_t);
template int64_t select_workspace_bytes<int64_t>(const SelectLimits&, int64_t, int64_t, int64_t);
template void select_rows<int32_t>(const SelectRequest<int32_t>&, const SelectLimits&, void*, cudaStream_t);
template void select_rows<int64_t>(const SelectRequest<int64_t>&, const SelectLimits&, void*, cudaStream_t);

}  // namespace quiver::gpu
