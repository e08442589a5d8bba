// GPU suites run only where a CUDA device is usable; elsewhere they skip with the reason.
#include <gtest/gtest.h>

#include "cpp/backend/gpu.h"

namespace quiver {
namespace {

TEST(GpuDevice, IsUsable) {
  if (gpu::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << gpu::unavailable_reason();
  EXPECT_GE(gpu::device_count(), 1);
}

}  // namespace
}  // namespace quiver
