#include "cuda/ivf/ivf_kernels.h"

#include <algorithm>

#include "cuda/core/error.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 256;
// Grid-stride loops: enough blocks to fill any current GPU, few enough to launch cheaply.
constexpr int64_t kMaxBlocks = 65535;

unsigned blocks_for(int64_t threads_needed) {
  return static_cast<unsigned>(std::clamp<int64_t>((threads_needed + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

__global__ void gather_words_kernel(const uint32_t* in, int64_t words, const int32_t* src, int64_t n,
                                    uint32_t* out) {
  const int64_t total = n * words;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / words;
    const int32_t s = src[row];
    if (s >= 0) out[i] = in[int64_t(s) * words + (i - row * words)];
  }
}

__global__ void scatter_words_kernel(const uint32_t* in, int64_t words, const int32_t* dest, int64_t n,
                                     uint32_t* out) {
  const int64_t total = n * words;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / words;
    out[int64_t(dest[row]) * words + (i - row * words)] = in[i];
  }
}

__global__ void probe_all_kernel(const float* tile, int64_t ld, int64_t n, int64_t nlist, const float* norms,
                                 float* keys, int32_t* lists) {
  const int64_t total = n * nlist;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t q = i / nlist;
    const int64_t l = i - q * nlist;
    keys[i] = tile[q * ld + l] + (norms != nullptr ? norms[l] : 0.f);
    lists[i] = static_cast<int32_t>(l);
  }
}

// One thread per word of 32 slots.
__global__ void slot_filter_kernel(const int64_t* slot_ids, int64_t slots, const uint8_t* id_bits, int64_t nbits,
                                   uint32_t* slot_bits) {
  const int64_t words = (slots + 31) / 32;
  for (int64_t w = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < words; w += int64_t(gridDim.x) * blockDim.x) {
    uint32_t bits = 0;
    for (int b = 0; b < 32; ++b) {
      const int64_t s = w * 32 + b;
      if (s >= slots) break;
      const int64_t id = slot_ids[s];
      if (id >= 0 && id < nbits && ((id_bits[id >> 3] >> (id & 7)) & 1)) bits |= 1u << b;
    }
    slot_bits[w] = bits;
  }
}

__global__ void finalize_slots_kernel(const float* keys, const int32_t* slots, int64_t count, int64_t k,
                                      const float* query_norms, bool l2, const int64_t* slot_ids, float* distances,
                                      int64_t* ids) {
  const float missing = l2 ? kSentinelKey : -kSentinelKey;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int32_t slot = slots[i];
    if (slot == SentinelValue<int32_t>::value || slot < 0) {
      distances[i] = missing;
      ids[i] = -1;
    } else {
      const float key = keys[i];
      distances[i] = l2 ? fmaxf(query_norms != nullptr ? key + query_norms[i / k] : key, 0.f) : -key;
      ids[i] = slot_ids != nullptr ? slot_ids[slot] : int64_t(slot);
    }
  }
}

}  // namespace

void launch_gather_words(const uint32_t* in, int64_t words, const int32_t* src, int64_t n, uint32_t* out,
                         cudaStream_t stream) {
  if (n == 0 || words == 0) return;
  gather_words_kernel<<<blocks_for(n * words), kThreads, 0, stream>>>(in, words, src, n, out);
  QV_LAUNCH_CHECK("gather_words_kernel");
}

void launch_scatter_words(const uint32_t* in, int64_t words, const int32_t* dest, int64_t n, uint32_t* out,
                          cudaStream_t stream) {
  if (n == 0 || words == 0) return;
  scatter_words_kernel<<<blocks_for(n * words), kThreads, 0, stream>>>(in, words, dest, n, out);
  QV_LAUNCH_CHECK("scatter_words_kernel");
}

void rotate_rows(cublasHandle_t handle, const float* rotation, int64_t dim, const float* x, int64_t n, float* out) {
  if (n == 0) return;
  const float one = 1.f, zero = 0.f;
  const int d = static_cast<int>(dim);
  QV_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, d, static_cast<int>(n), d, &one, rotation, d, x, d,
                              &zero, out, d));
}

void launch_probe_all(const float* tile, int64_t ld, int64_t n, int64_t nlist, const float* norms, float* keys,
                      int32_t* lists, cudaStream_t stream) {
  if (n == 0) return;
  probe_all_kernel<<<blocks_for(n * nlist), kThreads, 0, stream>>>(tile, ld, n, nlist, norms, keys, lists);
  QV_LAUNCH_CHECK("probe_all_kernel");
}

void launch_slot_filter(const int64_t* slot_ids, int64_t slots, const uint8_t* id_bits, int64_t nbits,
                        uint32_t* slot_bits, cudaStream_t stream) {
  if (slots == 0) return;
  slot_filter_kernel<<<blocks_for((slots + 31) / 32), kThreads, 0, stream>>>(slot_ids, slots, id_bits, nbits,
                                                                               slot_bits);
  QV_LAUNCH_CHECK("slot_filter_kernel");
}

void launch_finalize_slots(const float* keys, const int32_t* slots, int64_t rows, int64_t k, const float* query_norms,
                           bool l2, const int64_t* slot_ids, float* distances, int64_t* ids, cudaStream_t stream) {
  const int64_t count = rows * k;
  if (count == 0) return;
  finalize_slots_kernel<<<blocks_for(count), kThreads, 0, stream>>>(keys, slots, count, k, query_norms, l2, slot_ids,
                                                                    distances, ids);
  QV_LAUNCH_CHECK("finalize_slots_kernel");
}

}  // namespace quiver::gpu
