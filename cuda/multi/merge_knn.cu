// gpu_multi.h's result buffers and merge_knn: the parts' k-NN lists of each query merged by rank.
//
// Every real entry finds its place in the merged row at once: the entries of all lists before it in
// the order (distance, id), counted in each list by a binary search on distance (each list is sorted
// by it) and a scan of the few entries as close. Ids are distinct across the lists, so every real
// entry gets its own place; the places after the real entries stay missing. Parts on other devices
// are copied to the merging device first (peer copies, which need no peer access), parts on it are
// read where they are.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "cpp/backend/gpu_multi.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/core/transfer.h"
#include "cuda/ivf/device_buffer.h"

namespace quiver::gpu {

class ResultBuffer {
 public:
  ResultBuffer(Resources& resources, int64_t entries)
      : device(resources.device()), distances(resources.pool(), entries), ids(resources.pool(), entries),
        entries(entries) {}

  int device;
  DeviceBuffer<float> distances;
  DeviceBuffer<int64_t> ids;
  int64_t entries;
};

namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;
// merge_rows_in_shared: threads a query, and the most entries a query's rows may have in all (each
// 12 bytes of shared memory, within the default 48 KiB a block).
constexpr int kRowThreads = 128;
constexpr int64_t kSharedEntries = 4000;

// The lists of one merge, by value in the kernels' parameters (64 parts: 1 KiB).
struct MergeArgs {
  const float* distances[kMaxMergedParts];
  const int64_t* ids[kMaxMergedParts];
  int parts;
  int64_t nq;
  int k;
  bool larger_closer;
  float missing;  // the metric's missing distance
  float* out_distances;
  int64_t* out_ids;
};

// Ascending order of closeness.
__device__ __forceinline__ float order_key(float distance, bool larger_closer) {
  return larger_closer ? -distance : distance;
}

// The real entries of a list of n: the prefix before its first missing entry (id -1).
__device__ int real_entries(const int64_t* ids, int n) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (ids[mid] >= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// A list's keys (ascending order of closeness): read from its distances, or kept as keys.
struct DistanceKeys {
  const float* distances;
  bool larger_closer;
  __device__ float operator()(int j) const { return order_key(distances[j], larger_closer); }
};
struct StoredKeys {
  const float* keys;
  __device__ float operator()(int j) const { return keys[j]; }
};

// Real entries of a list (sorted by key) before (x, id) in the order (key, id): those closer, and
// those as close with a smaller id (a scan of the run of equal keys, whatever its order).
template <typename Keys>
__device__ int count_before(Keys key, const int64_t* ids, int n, float x, int64_t id) {
  int lo = 0, hi = n;  // the first entry not closer than x
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (key(mid) < x) lo = mid + 1;
    else hi = mid;
  }
  int before = lo;
  for (int j = lo; j < n && !(x < key(j)); ++j) before += ids[j] < id;
  return before;
}

// A block a query (rows of up to kSharedEntries entries in all): the parts' rows are loaded into
// shared memory with coalesced reads, then each real entry's place is counted there.
__global__ void merge_rows_in_shared(MergeArgs a) {
  extern __shared__ __align__(16) unsigned char shared[];
  const int n = a.parts * a.k;
  int64_t* ids = reinterpret_cast<int64_t*>(shared);
  float* keys = reinterpret_cast<float*>(ids + n);
  int* real = reinterpret_cast<int*>(keys + n);
  __shared__ int total_real;
  for (int64_t q = blockIdx.x; q < a.nq; q += gridDim.x) {
    const int64_t row = q * a.k;
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
      const int p = e / a.k;
      ids[e] = a.ids[p][row + e - p * a.k];
      keys[e] = order_key(a.distances[p][row + e - p * a.k], a.larger_closer);
    }
    __syncthreads();
    if (threadIdx.x < a.parts) real[threadIdx.x] = real_entries(ids + threadIdx.x * a.k, a.k);
    __syncthreads();
    if (threadIdx.x == 0) {
      int sum = 0;
      for (int p = 0; p < a.parts; ++p) sum += real[p];
      total_real = sum;
    }
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
      const int p = e / a.k;
      if (e - p * a.k >= real[p]) continue;
      int place = 0;
      for (int o = 0; o < a.parts && place < a.k; ++o)
        place += count_before(StoredKeys{keys + o * a.k}, ids + o * a.k, real[o], keys[e], ids[e]);
      if (place < a.k) {
        a.out_distances[row + place] = a.larger_closer ? -keys[e] : keys[e];
        a.out_ids[row + place] = ids[e];
      }
    }
    __syncthreads();
    for (int place = total_real + threadIdx.x; place < a.k; place += blockDim.x) {
      a.out_distances[row + place] = a.missing;
      a.out_ids[row + place] = -1;
    }
    __syncthreads();  // the next query's loads overwrite this one's rows
  }
}

// The rows too long for shared memory: every merged entry as missing first (the places no real
// entry takes stay so), then a thread a real entry, counting in global memory.
__global__ void fill_missing(MergeArgs a) {
  const int64_t n = a.nq * a.k;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    a.out_distances[e] = a.missing;
    a.out_ids[e] = -1;
  }
}

// A thread a real entry: its place in its query's merged row is the number of real entries of all
// lists before it (ids are distinct across the lists); places at k or beyond drop out.
__global__ void place_entries(MergeArgs a) {
  const int64_t per_part = a.nq * a.k;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < a.parts * per_part;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int p = int(e / per_part);
    const int64_t at = e - p * per_part;
    const int64_t id = a.ids[p][at];
    if (id < 0) continue;
    const int64_t row = at / a.k * a.k;
    const float distance = a.distances[p][at];
    const float x = order_key(distance, a.larger_closer);
    int place = 0;
    for (int o = 0; o < a.parts && place < a.k; ++o) {
      const int64_t* ids = a.ids[o] + row;
      place += count_before(DistanceKeys{a.distances[o] + row, a.larger_closer}, ids, real_entries(ids, a.k), x, id);
    }
    if (place < a.k) {
      a.out_distances[row + place] = distance;
      a.out_ids[row + place] = id;
    }
  }
}

// Lets the current device copy from `peer` directly (NVLink or PCIe); without it the driver stages
// peer copies through host memory. Once per pair for the process; a pair with no direct path keeps
// the staged copies.
void enable_peer_access(int device, int peer) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> tried;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tried.insert({device, peer}).second) return;
  int direct = 0;
  if (cudaDeviceCanAccessPeer(&direct, device, peer) != cudaSuccess || direct == 0) {
    cudaGetLastError();
    return;
  }
  if (cudaDeviceEnablePeerAccess(peer, 0) != cudaSuccess) cudaGetLastError();  // e.g. enabled already
}

unsigned grid_for(Resources& resources, int64_t threads) {
  const int64_t wanted = (threads + kThreads - 1) / kThreads;
  return unsigned(std::clamp<int64_t>(wanted, 1, int64_t(resources.limits().sm_count) * kBlocksPerSm));
}

}  // namespace

ResultBuffer* result_buffer_create(Resources& resources, int64_t entries) {
  require(entries >= 0, "entries = ", entries, " is negative");
  DeviceScope scope(resources.device());
  return new ResultBuffer(resources, entries);
}

void result_buffer_free(ResultBuffer* buffer) noexcept { delete buffer; }

int64_t result_buffer_entries(const ResultBuffer& buffer) { return buffer.entries; }

float* result_distances(ResultBuffer& buffer) { return buffer.distances.get(); }

int64_t* result_ids(ResultBuffer& buffer) { return buffer.ids.get(); }

void merge_knn(Resources& resources, Metric metric, int64_t first, int64_t nq, int64_t k,
               const std::vector<const ResultBuffer*>& parts, float* distances, int64_t* ids) {
  DeviceScope device_scope(resources.device());
  const int64_t count = static_cast<int64_t>(parts.size());
  require(count >= 1 && count <= kMaxMergedParts, "parts = ", count, " is outside 1 .. ", kMaxMergedParts);
  require(first >= 0 && nq >= 0, "first = ", first, " and nq = ", nq, " must not be negative");
  require(k >= 1 && k <= INT_MAX / 2, "k = ", k, " is out of range");
  const int64_t entries = nq * k, offset = first * k;
  for (int64_t p = 0; p < count; ++p) {
    require(parts[p] != nullptr, "part ", p, " is null");
    require(parts[p]->entries >= offset + entries, "part ", p, " holds ", parts[p]->entries,
            " entries, fewer than (first + nq) x k = ", offset + entries);
  }
  if (nq == 0) return;
  require(distances != nullptr && ids != nullptr, "distances and ids must not be null");

  Session session(resources);
  const int device = resources.device();
  DevicePool& pool = resources.pool();
  cudaStream_t stream = resources.stream(0);
  MergeArgs a{};
  a.parts = int(count);
  a.nq = nq;
  a.k = int(k);
  a.larger_closer = larger_is_closer(metric);
  a.missing = missing_distance(metric);
  std::vector<PoolBuffer<float>> copied_distances;
  std::vector<PoolBuffer<int64_t>> copied_ids;
  for (int64_t p = 0; p < count; ++p) {
    const ResultBuffer& part = *parts[p];
    if (part.device == device) {
      a.distances[p] = part.distances.get() + offset;
      a.ids[p] = part.ids.get() + offset;
      continue;
    }
    enable_peer_access(device, part.device);
    copied_distances.emplace_back(pool, entries);
    copied_ids.emplace_back(pool, entries);
    QV_CUDA_CHECK(cudaMemcpyPeerAsync(copied_distances.back().get(), device, part.distances.get() + offset,
                                      part.device, size_t(entries) * sizeof(float), stream));
    QV_CUDA_CHECK(cudaMemcpyPeerAsync(copied_ids.back().get(), device, part.ids.get() + offset, part.device,
                                      size_t(entries) * sizeof(int64_t), stream));
    a.distances[p] = copied_distances.back().get();
    a.ids[p] = copied_ids.back().get();
  }
  // The merged rows go straight to outputs in this device's memory, else through a device buffer.
  const bool direct =
      memory_kind(distances, device) == MemoryKind::device && memory_kind(ids, device) == MemoryKind::device;
  PoolBuffer<float> merged_distances;
  PoolBuffer<int64_t> merged_ids;
  if (direct) {
    a.out_distances = distances;
    a.out_ids = ids;
  } else {
    merged_distances = PoolBuffer<float>(pool, entries);
    merged_ids = PoolBuffer<int64_t>(pool, entries);
    a.out_distances = merged_distances.get();
    a.out_ids = merged_ids.get();
  }
  if (count * k <= kSharedEntries) {
    const size_t shared = size_t(count * k) * (sizeof(int64_t) + sizeof(float)) + size_t(count) * sizeof(int);
    const unsigned blocks = unsigned(std::min<int64_t>(nq, int64_t(resources.limits().sm_count) * 16));
    merge_rows_in_shared<<<blocks, kRowThreads, shared, stream>>>(a);
    QV_LAUNCH_CHECK("merge_rows_in_shared");
  } else {
    fill_missing<<<grid_for(resources, entries), kThreads, 0, stream>>>(a);
    QV_LAUNCH_CHECK("fill_missing");
    place_entries<<<grid_for(resources, count * entries), kThreads, 0, stream>>>(a);
    QV_LAUNCH_CHECK("place_entries");
  }
  if (!direct) {
    copy_from_device(resources.staging(), device, distances, a.out_distances, size_t(entries) * sizeof(float), stream);
    copy_from_device(resources.staging(), device, ids, a.out_ids, size_t(entries) * sizeof(int64_t), stream);
  }
  session.finish();
}

}  // namespace quiver::gpu
