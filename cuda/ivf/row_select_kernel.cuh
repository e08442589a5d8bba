// The kernel of row_select.h, instantiated once per k bucket by the row_select_k*.cu files.
//
// A task (a row, or a chunk of one) is scanned by W warps (warps_per_task: 1 when rows are many, up
// to 8 when few), each keeping a WarpSelect queue in registers over its interleaved share of the
// positions, kUnroll positions per lane in flight at once (the loads are latency-bound otherwise);
// the W queues then merge pairwise through shared memory (BlockSelect), and the first warp writes.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "cuda/core/error.h"
#include "cuda/ivf/row_select.h"
#include "cuda/ivf/row_select_output.cuh"
#include "cuda/select/block_merge.cuh"
#include "cuda/select/network.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu::detail {

constexpr int kRowSelectThreads = 256;
constexpr int kRowSelectWarps = kRowSelectThreads / kWarpSize;
constexpr int kRowSelectUnroll = 4;

// Shared memory of a launch with W warps per task: their queues, for the merge.
template <int KR>
constexpr size_t row_select_shared_bytes(int warps_per_task) {
  return warps_per_task == 1 ? 0 : size_t(kRowSelectWarps) * KR * kWarpSize * (sizeof(float) + sizeof(int32_t));
}

template <int KR, int T>
__global__ void __launch_bounds__(kRowSelectThreads) row_select_kernel(const RowSelectParams p) {
  extern __shared__ __align__(16) unsigned char shared[];
  using M = WarpLanes<int32_t, (KR >= 16)>;
  constexpr int K = KR * kWarpSize;
  constexpr int32_t kMissing = SentinelValue<int32_t>::value;
  const RowSelectInput& in = p.in;
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int warp = threadIdx.x / kWarpSize;
  const int wpt = p.warps_per_task;
  const int sub = warp % wpt;
  const int64_t per_block = kRowSelectWarps / wpt;
  const int64_t tasks = in.rows * p.chunks;
  // The loop bound is the same for the whole block, so the merge's barriers are reached by all.
  for (int64_t first_task = int64_t(blockIdx.x) * per_block; first_task < tasks;
       first_task += int64_t(gridDim.x) * per_block) {
    const int64_t task = first_task + warp / wpt;
    WarpSelect<M, KR, T> ws;
    ws.reset(static_cast<int>(in.k));
    const bool active = task < tasks;
    const int64_t row = !active ? 0 : p.chunks == 1 ? task : task / p.chunks;
    if (active) {
      const int64_t begin = p.chunks == 1 ? 0 : (task % p.chunks) * p.chunk_len;
      const float* dist = in.dist + row * in.row_stride;
      const int32_t* lists = in.lists + row * in.nprobe;
      int32_t rowlen = 0;  // the row's entries: its probed lists' sizes
      for (int64_t probe = lane; probe < in.nprobe; probe += kWarpSize) rowlen += in.list_size[lists[probe]];
#pragma unroll
      for (int d = kWarpSize / 2; d > 0; d /= 2) rowlen += __shfl_xor_sync(kFullWarp, rowlen, d);
      const int64_t end = min(int64_t(rowlen), begin + p.chunk_len);

      // This lane's segment: probe `probe` covers row positions [seg_start, seg_end), its slots
      // start at base. Positions only grow, so the cursor only moves forward.
      int64_t probe = -1, seg_start = 0, seg_end = 0;
      int32_t base = 0;
      const int64_t step = int64_t(wpt) * kWarpSize * kRowSelectUnroll;
      for (int64_t first = begin + int64_t(sub) * kWarpSize * kRowSelectUnroll; first < end; first += step) {
        float key[kRowSelectUnroll];
        int32_t slot[kRowSelectUnroll];
#pragma unroll
        for (int u = 0; u < kRowSelectUnroll; ++u) {
          const int64_t pos = first + u * kWarpSize + lane;
          key[u] = kSentinelKey;
          slot[u] = kMissing;
          if (pos < end) {
            while (pos >= seg_end) {
              ++probe;
              seg_start = seg_end;
              const int32_t list = lists[probe];
              seg_end += in.list_size[list];
              base = in.list_offset[list];
            }
            key[u] = dist[pos];
            slot[u] = base + static_cast<int32_t>(pos - seg_start);
          }
        }
        // One insertion site (offer's merge networks are inlined where called, and large): a loop
        // that is not unrolled, picking its pair with static register indices.
#pragma unroll 1
        for (int u = 0; u < kRowSelectUnroll; ++u) {
          float k = key[0];
          int32_t s = slot[0];
#pragma unroll
          for (int j = 1; j < kRowSelectUnroll; ++j) {
            k = u == j ? key[j] : k;
            s = u == j ? slot[j] : s;
          }
          offer(ws, in.slot_filter, k, s);
        }
      }
      ws.finish();
    }

    if (wpt > 1) {
      // BlockSelect: the task's warp queues merge into its first warp's.
      float* sk = reinterpret_cast<float*>(shared);
      int32_t* sv = reinterpret_cast<int32_t*>(shared + sizeof(float) * K * kRowSelectWarps);
      merge_block_queues(ws, sk, sv, warp, sub, wpt, lane);
    }
    if (!active || sub != 0) continue;

    if (p.final.distances != nullptr) {
      write_final(ws.wk, ws.wv, p.final, row, in.k, lane);
    } else {
      write_candidates(ws.wk, ws.wv, p.out_keys, p.out_slots, task, in.k, lane);
    }
  }
}

template <int KR, int T>
void launch_row_select(const RowSelectParams& p, cudaStream_t stream) {
  // Blocks resident per multiprocessor, asked once per device and shape (the query costs about a
  // launch).
  constexpr int kDevices = 64;
  static std::atomic<int> resident_by_device[kDevices][2];
  int device = 0, sms = 0;
  QV_CUDA_CHECK(cudaGetDevice(&device));
  QV_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const bool merged = p.warps_per_task > 1;
  const size_t shared = row_select_shared_bytes<KR>(p.warps_per_task);
  if (shared > 48 * 1024)
    QV_CUDA_CHECK(cudaFuncSetAttribute(row_select_kernel<KR, T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(shared)));
  int resident = device < kDevices ? resident_by_device[device][merged].load(std::memory_order_relaxed) : 0;
  if (resident == 0) {
    QV_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, row_select_kernel<KR, T>,
                                                                kRowSelectThreads, shared));
    resident = std::max(resident, 1);
    if (device < kDevices) resident_by_device[device][merged].store(resident, std::memory_order_relaxed);
  }
  const int64_t per_block = kRowSelectWarps / p.warps_per_task;
  const int64_t tasks = p.in.rows * p.chunks;
  const int64_t blocks = std::min<int64_t>((tasks + per_block - 1) / per_block, int64_t(resident) * sms);
  row_select_kernel<KR, T>
      <<<static_cast<unsigned>(std::max<int64_t>(blocks, 1)), kRowSelectThreads, shared, stream>>>(p);
  QV_LAUNCH_CHECK("row_select_kernel");
}

}  // namespace quiver::gpu::detail

#define QV_INSTANTIATE_ROW_SELECT(KR, T) \
  namespace quiver::gpu::detail {        \
  template void launch_row_select<KR, T>(const RowSelectParams&, cudaStream_t); \
  }
