// Helpers of the GPU suites: the skip when no device is usable, one shared Resources, device arrays,
// random data and float64 references.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cpp/backend/gpu.h"

// Every test that touches the device starts with this: CI builds and runs these binaries on
// machines without a GPU.
#define QV_REQUIRE_GPU()                                                                     \
  do {                                                                                      \
    if (::quiver::gpu::device_count() == 0)                                                 \
      GTEST_SKIP() << "no CUDA device: " << ::quiver::gpu::unavailable_reason();            \
  } while (0)

#define QV_ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

namespace quiver::testing {

// The device every context and Resources of the suites is created on: QUIVER_TEST_DEVICE (an
// ordinal, or "last"), 0 by default. scripts/gpu.sh runs the suites again on the last ordinal of a
// machine with several GPUs, while the test threads keep device 0 current: each entry into the
// backend must make its own device current.
inline int test_device() {
  const char* value = std::getenv("QUIVER_TEST_DEVICE");
  if (value == nullptr || *value == 0) return 0;
  const int count = gpu::device_count();
  if (std::string(value) == "last") return count > 0 ? count - 1 : 0;
  const int device = std::atoi(value);
  return device >= 0 && device < count ? device : 0;
}

inline gpu::ResourcesOptions test_resources_options() {
  gpu::ResourcesOptions options;
  options.device = test_device();
  return options;
}

// Resources of their own on test_device() whose tiles hold `tile_bytes` (small budgets: many query
// tiles, hit buffers that overflow).
inline gpu::ResourcesPtr make_test_resources(int64_t tile_bytes) {
  gpu::ResourcesOptions options = test_resources_options();
  options.tile_bytes = tile_bytes;
  return gpu::make_resources(options);
}

// Makes test_device() current for a scope: the tests' own device arrays and kernel launches.
class TestDeviceScope {
 public:
  TestDeviceScope() {
    cudaGetDevice(&previous_);
    cudaSetDevice(test_device());
  }
  ~TestDeviceScope() { cudaSetDevice(previous_); }

 private:
  int previous_ = 0;
};

// One Resources for the whole test program, created on first use, destroyed before exit (so
// compute-sanitizer's leak check sees everything freed).
gpu::Resources& shared_resources();

// A device copy of a host vector, freed on destruction. Its copies run with test_device() current:
// a copy from pageable memory may still be in flight when cudaMemcpy returns, and only the legacy
// default stream of the current device orders it before the Resources' (blocking) streams; a copy
// back then also waits for the work queued there.
template <typename T>
class DeviceArray {
 public:
  // On test_device(), like the Resources the tests pass it to.
  explicit DeviceArray(size_t count) : count_(count) {
    TestDeviceScope scope;
    if (count_ == 0) return;
    const cudaError_t status = cudaMalloc(&data_, count_ * sizeof(T));
    if (status != cudaSuccess) {
      data_ = nullptr;
      ADD_FAILURE() << "DeviceArray: cudaMalloc of " << count_ * sizeof(T) << " bytes: " << cudaGetErrorString(status);
    }
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    TestDeviceScope scope;
    if (data_ != nullptr)
      EXPECT_EQ(cudaMemcpy(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceArray() {
    TestDeviceScope scope;
    cudaFree(data_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return data_; }
  std::vector<T> to_host() const {
    TestDeviceScope scope;
    std::vector<T> out(count_);
    if (data_ != nullptr)
      EXPECT_EQ(cudaMemcpy(out.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  T* data_ = nullptr;
  size_t count_;
};

inline std::vector<float> uniform_vectors(int64_t n, int64_t dim, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> value(-scale, scale);
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (auto& v : x) v = value(gen);
  return x;
}

// Points around `clusters` centres (uniform in [-10, 10)^dim, seed), uniform noise in [-1, 1) (seed
// + 1); point i near centre i * 7 % clusters.
inline std::vector<float> clustered_vectors(int64_t n, int64_t dim, int64_t clusters, uint32_t seed) {
  const auto centres = uniform_vectors(clusters, dim, seed, 10.0f);
  std::vector<float> x = uniform_vectors(n, dim, seed + 1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < dim; ++d) x[i * dim + d] += centres[(i * 7 % clusters) * dim + d];
  return x;
}

// Small integers: every distance is exact in float, so ties are exact and their order is testable.
inline std::vector<float> integer_vectors(int64_t n, int64_t dim, uint32_t seed, int range) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> value(-range, range);
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (auto& v : x) v = float(value(gen));
  return x;
}

inline void normalize(std::vector<float>& x, int64_t dim) {
  for (size_t r = 0; r < x.size() / size_t(dim); ++r) {
    double sum = 0;
    for (int64_t i = 0; i < dim; ++i) sum += double(x[r * dim + i]) * x[r * dim + i];
    const double inv = sum > 0 ? 1.0 / std::sqrt(sum) : 1.0;
    for (int64_t i = 0; i < dim; ++i) x[r * dim + i] = float(x[r * dim + i] * inv);
  }
}

// Squared L2 (l2) or inner product, in double.
inline double exact_value(bool l2, const float* a, const float* b, int64_t dim) {
  double sum = 0;
  for (int64_t i = 0; i < dim; ++i) {
    const double d = l2 ? double(a[i]) - b[i] : double(a[i]) * b[i];
    sum += l2 ? d * d : d;
  }
  return sum;
}

// Whether a filter (bit j % 8 of byte j / 8; null: everything allowed) allows id j.
inline bool allowed(const std::vector<uint8_t>* filter, int64_t j) {
  return !filter || (j >= 0 && j < int64_t(filter->size()) * 8 && (((*filter)[j >> 3] >> (j & 7)) & 1));
}

}  // namespace quiver::testing
