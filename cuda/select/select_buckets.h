// The k buckets of the selection kernels: each bucket is one instantiation (in its own .cu file, so
// nvcc builds them in parallel). KR is the warp queue in registers (k <= KR * 32), T the thread queue
// length; T follows the paper's measurements (§4.3: t = 2 for k <= 32, 3 up to 128, 4 up to 256, 8
// up to 1024), with 6 for 512 between its 4 and 8. Powers of two only, so a k of 1 .. 2048 wastes at
// most half of its queue.
#pragma once

#include <cstdint>

namespace quiver::gpu::detail {

struct SelectBucket {
  int k;   // largest k served
  int kr;  // warp queue registers per lane
  int t;   // thread queue length
};

constexpr SelectBucket kSelectBuckets[] = {
    {32, 1, 2}, {64, 2, 3}, {128, 4, 3}, {256, 8, 4}, {512, 16, 6}, {1024, 32, 8}, {2048, 64, 8},
};
constexpr int kSelectBucketCount = sizeof(kSelectBuckets) / sizeof(kSelectBuckets[0]);

// The smallest bucket serving k (1 <= k <= 2048).
constexpr int select_bucket(int64_t k) {
  int b = 0;
  while (b + 1 < kSelectBucketCount && kSelectBuckets[b].k < k) ++b;
  return b;
}

}  // namespace quiver::gpu::detail
