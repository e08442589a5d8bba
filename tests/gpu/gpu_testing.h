// Helpers of the GPU suites: the skip when no device is usable, one shared Resources, device arrays,
// random data and float64 references.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
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

// One Resources for the whole test program, created on first use, destroyed before exit (so
// compute-sanitizer's leak check sees everything freed).
gpu::Resources& shared_resources();

// A device copy of a host vector, freed on destruction.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t count) : count_(count) {
    if (count_ > 0 && cudaMalloc(&data_, count_ * sizeof(T)) != cudaSuccess) data_ = nullptr;
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    if (data_ != nullptr) cudaMemcpy(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return data_; }
  std::vector<T> to_host() const {
    std::vector<T> out(count_);
    if (count_ > 0) cudaMemcpy(out.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost);
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
