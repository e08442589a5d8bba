// gpu_ivf.h's IvfDevice: the device copy of a trained IVF model and its inverted lists.
//
// Storage: every list lives in one arena of slots (one slot = one entry), list l owning the slots
// [offset[l], offset[l] + capacity[l]), of which the first size[l] are used. Each slot has its code
// (code_stride bytes), and, as the model asks, its raw vector, a float term of its L2 distance (the
// squared norm for IVF-Flat, term 1 for IVF-PQ) and its 64-bit id (unless ids_on_host). Adds write into the free slots of their lists; a list that
// overflows makes the arena be rebuilt with every overflowing list's capacity grown by half (at
// least what it needs), so repeated adds cost amortised O(1) copies per entry. Rebuilding allocates
// the new arena before touching the old one, so out-of-memory leaves the index unchanged.
//
// The ids are also kept on the host (one mirror slot per arena slot): removal and list reads work
// from it, and with ids_on_host it is the only copy. Searches and selections number entries by
// their slot (int32 on the device), translated to ids at the end.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/backend/gpu_ivf.h"
#include "cuda/ivf/device_buffer.h"

namespace quiver::gpu {

// Sub-quantizer centroids per PQ codebook.
constexpr int64_t kPqCentroids = 256;
// Slots are numbered in int32 on the device; this one is the selection's "none" (INT32_MAX).
constexpr int64_t kMaxSlots = int64_t(0x7fffffff) - 1;

// The arena's device arrays.
struct IvfArena {
  int64_t capacity = 0;            // slots
  DeviceBuffer<uint8_t> codes;     // capacity x code_stride
  DeviceBuffer<float> raw;         // capacity x dim (keep_raw, unless the codes are the raw vectors)
  // capacity, L2 only: IVF-Flat ||y||^2; IVF-PQ the entry's term 1, ||r||^2 + 2 <c, r> (pq_tables.h)
  DeviceBuffer<float> norms;
  DeviceBuffer<int64_t> ids;       // capacity (unless ids_on_host)
};

class IvfDevice {
 public:
  int device = 0;
  Metric metric = Metric::l2;
  int64_t dim = 0;
  int64_t nlist = 0;
  int64_t pq_m = 0;  // 0: IVF-Flat
  int64_t dsub = 0;  // dim / pq_m
  bool keep_raw = false;
  bool ids_on_host = false;
  bool rotated = false;
  int64_t code_bytes = 0;   // gpu_ivf.h's: dim * 4 or pq_m
  int64_t code_stride = 0;  // bytes of a slot's code: dim * 4, or pq_m rounded up to whole words
  bool raw_in_codes = false;  // IVF-Flat without rotation: the codes are the raw vectors

  bool flat() const { return pq_m == 0; }
  bool l2() const { return metric == Metric::l2; }

  // ---- the model on the device ----
  DeviceBuffer<float> centroids;       // nlist x dim (rotated space)
  DeviceBuffer<float> centroid_norms;  // nlist
  DeviceBuffer<float> rotation;        // dim x dim, or empty
  DeviceBuffer<float> codebooks;       // pq_m x 256 x dsub

  // ---- the lists ----
  std::vector<int64_t> offset, size, capacity;  // per list, in slots (host)
  std::vector<int64_t> host_ids;                // per arena slot (used slots only are meaningful)
  int64_t count = 0;
  // Prefix sums of the list sizes sorted largest first: top_sizes[p] = entries of the p largest
  // lists, which bounds what nprobe = p lists can hold.
  std::vector<int64_t> top_sizes;
  IvfArena arena;
  DeviceBuffer<int32_t> offset_dev;  // nlist
  DeviceBuffer<int32_t> size_dev;    // nlist

  int64_t max_list_size() const { return top_sizes.size() > 1 ? top_sizes[1] : 0; }
  int64_t row_bound(int64_t nprobe) const { return top_sizes[size_t(nprobe)]; }
  const float* raw_vectors() const {
    return raw_in_codes ? reinterpret_cast<const float*>(arena.codes.get()) : arena.raw.get();
  }
};

}  // namespace quiver::gpu
