// The id filter of an IVF search as a bitset over the arena's slots, on the device: what the list
// scans of the k-NN search (ivf_search.cu) and the range search (range_search.cu) test.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/core/memory_pool.h"
#include "cuda/core/resources.h"
#include "cuda/ivf/ivf_device.h"

namespace quiver::gpu {

// Bit s % 32 of word s / 32 set when slot s holds an id the filter allows (bit id % 8 of byte
// id / 8 of bits, ids below nbits); an empty buffer when bits is null. Enqueued on stream.
PoolBuffer<uint32_t> upload_slot_filter(Resources& resources, const IvfDevice& ivf, const uint8_t* bits,
                                        int64_t nbits, cudaStream_t stream);

}  // namespace quiver::gpu
