// The dense selection (select_dense.h): one block a row.
#include "cuda/select/select_dense.h"

#include "cpp/core/error.h"
#include "cuda/core/error.h"
#include "cuda/select/warp_lanes.cuh"
#include "cuda/select/warp_select.h"

namespace quiver::gpu::detail {

namespace {

constexpr int kThreads = 512;
constexpr int kDigitBits = 8;
constexpr int kBins = 1 << kDigitBits;
constexpr int kBinsPerLane = kBins / kWarpSize;
// A pair's column index (below kDenseMaxPairs) and, in its top bit, "left out" (NaN key, filtered id).
constexpr uint16_t kLeftOut = 0x8000;
static_assert(kDenseMaxPairs <= kLeftOut, "column indexes fit below the flag");
// Above every key's bits: the sort's padding.
constexpr uint32_t kPadBits = 0xffffffffu;

// Slots of the block's scratch words.
enum Scratch { kBin, kRank, kBinCount, kTaken, kTiesTaken, kScratchWords };

// A key's bits, ordered as the keys are (-0 taken as +0, so that it ties with +0 as floats do).
__device__ __forceinline__ uint32_t key_bits(float key) {
  const uint32_t u = __float_as_uint(key + 0.f);
  return u ^ ((u >> 31) != 0 ? 0xffffffffu : 0x80000000u);
}

__device__ __forceinline__ float bits_key(uint32_t b) {
  return __uint_as_float(b ^ ((b >> 31) != 0 ? 0x80000000u : 0xffffffffu));
}

// An id's bits, ordered as the ids are (signed).
template <typename V>
__device__ __forceinline__ uint64_t id_bits(V id) {
  constexpr int kBitsOfV = 8 * int(sizeof(V));
  return (uint64_t(id) & (~uint64_t(0) >> (64 - kBitsOfV))) ^ (uint64_t(1) << (kBitsOfV - 1));
}

__device__ __forceinline__ bool allowed(const uint8_t* filter, int64_t bits, int64_t id) {
  return id >= 0 && id < bits && ((filter[id >> 3] >> (id & 7)) & 1) != 0;
}

// Warp 0: the bin of `hist` that holds the pair of 1-based rank `rank` (counting from bin 0), the
// rank within it and the bin's count, into scratch.
__device__ __forceinline__ void find_bin(const int* hist, int rank, int lane, int* scratch) {
  int count[kBinsPerLane];
  int sum = 0;
#pragma unroll
  for (int j = 0; j < kBinsPerLane; ++j) {
    count[j] = hist[lane * kBinsPerLane + j];
    sum += count[j];
  }
  int inclusive = sum;
#pragma unroll
  for (int d = 1; d < kWarpSize; d *= 2) {
    const int v = __shfl_up_sync(kFullWarp, inclusive, d);
    if (lane >= d) inclusive += v;
  }
  const int owner = __ffs(__ballot_sync(kFullWarp, inclusive >= rank)) - 1;  // the bins hold rank pairs or more
  if (lane != owner) return;
  int before = inclusive - sum;
#pragma unroll
  for (int j = 0; j < kBinsPerLane; ++j) {
    if (before + count[j] >= rank) {
      scratch[kBin] = lane * kBinsPerLane + j;
      scratch[kRank] = rank - before;
      scratch[kBinCount] = count[j];
      return;
    }
    before += count[j];
  }
}

// One radix pass over the pairs that `match`: their digit `digit(i)` counted in `hist`, then the bin
// of rank `rank` found (scratch). Every thread of the block calls it.
template <typename Match, typename Digit>
__device__ __forceinline__ void radix_pass(int pairs, int rank, int* hist, int* scratch, Match match, Digit digit) {
  const int tid = static_cast<int>(threadIdx.x), lane = tid % kWarpSize, warp = tid / kWarpSize;
  for (int b = tid; b < kBins; b += kThreads) hist[b] = 0;
  __syncthreads();
  // A warp's 32 pairs: lanes with the same digit add once (shared atomics on one word serialise).
  for (int base = warp * kWarpSize; base < pairs; base += kThreads) {
    const int i = base + lane;
    const bool in = i < pairs && match(i);
    const unsigned d = in ? digit(i) : unsigned(kBins);
    const unsigned same = __match_any_sync(kFullWarp, d);
    if (in && lane == __ffs(same) - 1) atomicAdd(&hist[d], __popc(same));
  }
  __syncthreads();
  if (warp == 0) find_bin(hist, rank, lane, scratch);
  __syncthreads();
}

// Row blockIdx.x: its pairs (columns, then the previous result) as key bits and column indexes in
// shared memory; the k-th smallest pair by radix selection; the pairs at or below it into `sorted`
// (q >= k slots, a power of two), sorted there (bitonic), and the first k written out.
template <typename V>
__global__ void __launch_bounds__(kThreads) dense_select_kernel(const SelectParams<V> p, int pairs, int q) {
  extern __shared__ __align__(16) unsigned char shared[];
  constexpr V kMissing = SentinelValue<V>::value;
  auto* bits = reinterpret_cast<uint32_t*>(shared);
  auto* cols = reinterpret_cast<uint16_t*>(bits + pairs);
  auto* sorted_bits = reinterpret_cast<uint32_t*>(shared + (size_t(pairs) * 6 + 15) / 16 * 16);
  auto* sorted_ids = reinterpret_cast<V*>(sorted_bits + q);
  int* hist = reinterpret_cast<int*>(sorted_ids + q);
  int* scratch = hist + kBins;

  const int64_t row = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int64_t k = p.k;
  const int64_t ncols = p.cols;

  auto column_id = [&](int64_t c) { return p.ids != nullptr ? p.ids[row * p.ld + c] : V(p.id_base + c); };
  auto id_of = [&](int i) -> V {
    const int c = cols[i];
    if ((c & kLeftOut) != 0) return kMissing;
    return c < ncols ? column_id(c) : p.prev_ids[row * k + (c - ncols)];
  };

  for (int i = tid; i < pairs; i += kThreads) {
    float key;
    bool left_out = false;
    if (i < ncols) {
      key = fmaf(p.in_scale, p.keys[row * p.ld + i], p.bias != nullptr ? p.bias[i] : 0.f);
      left_out = !(key == key) || (p.filter != nullptr && !allowed(p.filter, p.filter_bits, column_id(i)));
    } else {
      key = p.prev_scale * p.prev_keys[row * k + (i - ncols)];
    }
    bits[i] = key_bits(left_out ? kSentinelKey : key);
    cols[i] = static_cast<uint16_t>(i | (left_out ? kLeftOut : 0));
  }
  if (tid == 0) {
    scratch[kTaken] = 0;
    scratch[kTiesTaken] = 0;
  }
  __syncthreads();

  // The threshold pair (key bits, id bits): all pairs below it are taken, and `ties_wanted` of those
  // equal to it. With no more pairs than k, every pair.
  uint32_t key_limit = kPadBits;
  uint64_t id_limit = ~uint64_t(0);
  bool split_ties = false;
  int ties_wanted = 0;
  if (pairs > k) {
    uint32_t prefix = 0, mask = 0;
    int rank = static_cast<int>(k);
    for (int shift = 32 - kDigitBits; shift >= 0; shift -= kDigitBits) {
      radix_pass(
          pairs, rank, hist, scratch, [&](int i) { return (bits[i] & mask) == prefix; },
          [&](int i) { return (bits[i] >> shift) & (kBins - 1); });
      prefix |= uint32_t(scratch[kBin]) << shift;
      mask |= uint32_t(kBins - 1) << shift;
      rank = scratch[kRank];
    }
    key_limit = prefix;
    // Pairs with the threshold's key: all of them taken, or the `rank` smallest ids among them.
    if (rank < scratch[kBinCount]) {
      split_ties = true;
      uint64_t id_prefix = 0, id_mask = 0;
      for (int shift = 8 * int(sizeof(V)) - kDigitBits; shift >= 0; shift -= kDigitBits) {
        radix_pass(
            pairs, rank, hist, scratch,
            [&](int i) { return bits[i] == key_limit && (id_bits(id_of(i)) & id_mask) == id_prefix; },
            [&](int i) { return unsigned(id_bits(id_of(i)) >> shift) & (kBins - 1); });
        id_prefix |= uint64_t(scratch[kBin]) << shift;
        id_mask |= uint64_t(kBins - 1) << shift;
        rank = scratch[kRank];
      }
      id_limit = id_prefix;
      ties_wanted = rank;  // of the pairs equal to the threshold (equal ids too: any of them)
    }
  }

  // The taken pairs (min(pairs, k)) into `sorted`, a warp's at once.
  for (int base = warp * kWarpSize; base < pairs; base += kThreads) {
    const int i = base + lane;
    bool take = false;
    V id = kMissing;
    if (i < pairs && bits[i] <= key_limit) {
      id = id_of(i);
      if (!split_ties || bits[i] < key_limit) {
        take = true;
      } else {
        const uint64_t b = id_bits(id);
        take = b < id_limit || (b == id_limit && atomicAdd(&scratch[kTiesTaken], 1) < ties_wanted);
      }
    }
    const unsigned taking = __ballot_sync(kFullWarp, take);
    int first = 0;
    if (lane == 0 && taking != 0) first = atomicAdd(&scratch[kTaken], __popc(taking));
    first = __shfl_sync(kFullWarp, first, 0);
    if (take) {
      const int slot = first + __popc(taking & ((1u << lane) - 1));
      sorted_bits[slot] = bits[i];
      sorted_ids[slot] = id;
    }
  }
  __syncthreads();
  for (int i = scratch[kTaken] + tid; i < q; i += kThreads) {
    sorted_bits[i] = kPadBits;
    sorted_ids[i] = kMissing;
  }
  __syncthreads();

  // Bitonic sort of the q slots by (key, id), ascending.
  for (int size = 2; size <= q; size *= 2) {
    for (int stride = size / 2; stride > 0; stride /= 2) {
      for (int t = tid; t < q / 2; t += kThreads) {
        const int lo = 2 * t - (t & (stride - 1)), hi = lo + stride;
        const uint32_t a = sorted_bits[lo], b = sorted_bits[hi];
        const V ia = sorted_ids[lo], ib = sorted_ids[hi];
        const bool greater = a > b || (a == b && ia > ib);
        if (greater == ((lo & size) == 0)) {
          sorted_bits[lo] = b;
          sorted_bits[hi] = a;
          sorted_ids[lo] = ib;
          sorted_ids[hi] = ia;
        }
      }
      __syncthreads();
    }
  }

  for (int64_t e = tid; e < k; e += kThreads) {
    const uint32_t b = sorted_bits[e];
    const V id = sorted_ids[e];
    const bool missing = b == kPadBits || id == kMissing;
    p.out_keys[row * k + e] = p.out_scale * (b == kPadBits ? kSentinelKey : bits_key(b));
    p.out_ids[row * k + e] = missing ? (p.missing_minus_one ? V(-1) : kMissing) : id;
  }
}

// A power of two of at least k slots (and 2: the ids after the key bits stay 8-byte aligned).
int sort_slots(int64_t k) {
  int q = 2;
  while (q < k) q *= 2;
  return q;
}

template <typename V>
size_t shared_bytes(int pairs, int q) {
  return (size_t(pairs) * 6 + 15) / 16 * 16 + size_t(q) * (sizeof(uint32_t) + sizeof(V)) +
         (kBins + kScratchWords) * sizeof(int);
}

}  // namespace

template <typename V>
void launch_dense_select(const SelectParams<V>& p, int64_t rows, cudaStream_t stream) {
  const int64_t pairs = p.cols + (p.prev_keys != nullptr ? p.k : 0);
  require(p.keys16 == nullptr && pairs <= kDenseMaxPairs && p.k >= 1,
          "dense_select: float keys and at most ", kDenseMaxPairs, " pairs a row (", pairs, ")");
  if (rows == 0) return;
  const int q = sort_slots(p.k);
  const size_t bytes = shared_bytes<V>(static_cast<int>(pairs), q);
  QV_CUDA_CHECK(
      cudaFuncSetAttribute(dense_select_kernel<V>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  dense_select_kernel<V><<<static_cast<unsigned>(rows), kThreads, bytes, stream>>>(p, static_cast<int>(pairs), q);
  QV_LAUNCH_CHECK("dense_select_kernel");
}

template void launch_dense_select<int32_t>(const SelectParams<int32_t>&, int64_t, cudaStream_t);
template void launch_dense_select<int64_t>(const SelectParams<int64_t>&, int64_t, cudaStream_t);

}  // namespace quiver::gpu::detail
