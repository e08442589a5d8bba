#include "cuda/ivf/slot_filter.h"

#include <algorithm>
#include <vector>

#include "cuda/core/transfer.h"
#include "cuda/ivf/ivf_kernels.h"

namespace quiver::gpu {

PoolBuffer<uint32_t> upload_slot_filter(Resources& resources, const IvfDevice& ivf, const uint8_t* filter_bits,
                                        int64_t filter_nbits, cudaStream_t stream) {
  PoolBuffer<uint32_t> slot_filter;
  if (filter_bits == nullptr) return slot_filter;
  DevicePool& pool = resources.pool();
  HostStaging& staging = resources.staging();
  const int device = resources.device();
  const int64_t words = std::max<int64_t>(1, (ivf.arena.capacity + 31) / 32);
  slot_filter = PoolBuffer<uint32_t>(pool, words);
  if (ivf.ids_on_host) {
    // The ids live on the host: the bitset is made there.
    std::vector<uint32_t> bits(static_cast<size_t>(words), 0);
    for (size_t l = 0; l < size_t(ivf.nlist); ++l) {
      for (int64_t e = 0; e < ivf.size[l]; ++e) {
        const int64_t slot = ivf.offset[l] + e;
        const int64_t id = ivf.host_ids[size_t(slot)];
        if (id >= 0 && id < filter_nbits && ((filter_bits[id >> 3] >> (id & 7)) & 1))
          bits[size_t(slot >> 5)] |= 1u << (slot & 31);
      }
    }
    copy_to_device(staging, device, slot_filter.get(), bits.data(), bits.size() * 4, stream);
    return slot_filter;
  }
  // The id bitset goes up and a kernel maps it onto the slots; the pool reuses the id buffer
  // only after this stream's work (a call's buffers are stream-ordered).
  const int64_t bytes = std::max<int64_t>(1, (filter_nbits + 7) / 8);
  PoolBuffer<uint8_t> id_filter(pool, bytes);
  if (filter_nbits > 0) copy_to_device(staging, device, id_filter.get(), filter_bits, size_t(bytes), stream);
  launch_slot_filter(ivf.arena.ids.get(), ivf.arena.capacity, id_filter.get(), filter_nbits, slot_filter.get(),
                     stream);
  return slot_filter;
}

}  // namespace quiver::gpu
