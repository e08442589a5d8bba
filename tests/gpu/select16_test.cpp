// cuda/select with 16-bit keys (fp16 / bf16, the fast exact-search modes' distance tiles) against a
// sorted reference of the same float arithmetic: every k bucket, k above the row length, ties, a
// column bias, a key scale, both directions, the one- and two-pass plans.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cpp/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/select/select.h"
#include "cuda/select/warp_select.h"
#include "gpu_testing.h"
#include "select_testing.h"

namespace quiver {
namespace {

using testing::DeviceArray;

struct Case {
  int64_t rows, cols, k;
  bool bf16, largest, bias, ties;
  int sm_count;  // 0: the device's
};

float value_of(uint16_t bits, bool bf16) {
  if (bf16) {
    const uint32_t w = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &w, sizeof f);
    return f;
  }
  __half h;
  std::memcpy(&h, &bits, sizeof bits);
  return __half2float(h);
}

uint16_t bits_of(float f, bool bf16) {
  uint16_t bits;
  if (bf16) {
    const __nv_bfloat16 b = __float2bfloat16(f);
    std::memcpy(&bits, &b, sizeof bits);
  } else {
    const __half h = __float2half(f);
    std::memcpy(&bits, &h, sizeof bits);
  }
  return bits;
}

void check(const Case& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "rows " << c.rows << " cols " << c.cols << " k " << c.k
                                    << (c.bf16 ? " bf16" : " fp16") << (c.largest ? " largest" : "")
                                    << (c.bias ? " bias" : "") << (c.ties ? " ties" : "") << " sm " << c.sm_count);
  gpu::Resources& resources = testing::shared_resources();
  const int64_t ld = (c.cols + 7) / 8 * 8 + 8;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> uniform(-300.f, 300.f);
  std::vector<uint16_t> keys(size_t(c.rows * ld), bits_of(1e4f, c.bf16));  // padding: never read
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t col = 0; col < c.cols; ++col)
      keys[size_t(r * ld + col)] = bits_of(c.ties ? float(int(gen() % 5)) : uniform(gen), c.bf16);
  std::vector<float> bias(size_t(c.cols));
  for (auto& b : bias) b = c.ties ? float(int(gen() % 3)) : uniform(gen) * 0.01f;
  const float key_scale = 0.25f;
  const int64_t id_base = 5;

  DeviceArray<uint16_t> d_keys(keys);
  DeviceArray<float> d_bias(bias);
  DeviceArray<float> out_k(size_t(c.rows * c.k));
  DeviceArray<int32_t> out_i(size_t(c.rows * c.k));
  gpu::SelectRequest<int32_t> r;
  r.key_format = c.bf16 ? gpu::KeyFormat::bf16 : gpu::KeyFormat::f16;
  r.keys16 = d_keys.get();
  r.key_scale = key_scale;
  r.ld = ld;
  r.rows = c.rows;
  r.cols = c.cols;
  r.k = c.k;
  r.largest = c.largest;
  r.column_bias = c.bias ? d_bias.get() : nullptr;
  r.id_base = id_base;
  r.out_keys = out_k.get();
  r.out_ids = out_i.get();
  gpu::SelectLimits limits = resources.limits();
  if (c.sm_count > 0) limits.sm_count = c.sm_count;
  testing::run_select(resources, r, limits);
  const auto got_k = out_k.to_host();
  const auto got_i = out_i.to_host();
  const float in_scale = c.largest ? -key_scale : key_scale;
  for (int64_t row = 0; row < c.rows; ++row) {
    std::vector<std::pair<float, int32_t>> all;
    for (int64_t col = 0; col < c.cols; ++col) {
      const float x = value_of(keys[size_t(row * ld + col)], c.bf16);
      const float key = c.bias ? std::fma(in_scale, x, bias[size_t(col)]) : in_scale * x;
      all.push_back({key, int32_t(id_base + col)});
    }
    std::sort(all.begin(), all.end());
    for (int64_t i = 0; i < c.k; ++i) {
      const size_t at = size_t(row * c.k + i);
      const float want_k = i < int64_t(all.size()) ? (c.largest ? -all[size_t(i)].first : all[size_t(i)].first)
                                                   : (c.largest ? -gpu::kSentinelKey : gpu::kSentinelKey);
      const int32_t want_i = i < int64_t(all.size()) ? all[size_t(i)].second : -1;
      ASSERT_EQ(got_k[at], want_k) << "row " << row << " rank " << i;
      ASSERT_EQ(got_i[at], want_i) << "row " << row << " rank " << i;
    }
  }
}

TEST(GpuSelect16, MatchesSortInEveryBucket) {
  QV_REQUIRE_GPU();
  const int64_t shapes[][3] = {{1, 1, 1},      {3, 31, 7},      {5, 33, 32},      {37, 100, 100},  {100, 4099, 100},
                               {2, 5000, 1000}, {7, 3001, 2048}, {1, 200000, 100}, {300, 2500, 1},  {2000, 700, 32},
                               {16, 20000, 512}, {9, 513, 256},  {3, 31, 64},      {4, 1000, 2048}, {64, 1000, 7}};
  uint32_t seed = 1;
  for (bool bf16 : {false, true}) {
    for (const auto& s : shapes) {
      check({s[0], s[1], s[2], bf16, false, true, false, 0}, seed++);
      check({s[0], s[1], s[2], bf16, true, false, true, 0}, seed++);
    }
  }
}

TEST(GpuSelect16, TiesBiasAndEveryPlan) {
  QV_REQUIRE_GPU();
  uint32_t seed = 100;
  for (int sm : {1, 4096}) {
    for (bool bf16 : {false, true}) {
      for (const auto& s : {Case{3, 20000, 100}, Case{40, 9000, 1000}, Case{1, 70000, 2048}, Case{500, 300, 10}}) {
        Case c = s;
        c.bf16 = bf16;
        c.sm_count = sm;
        c.ties = true;
        c.bias = true;
        check(c, seed++);
        c.ties = false;
        c.largest = true;
        check(c, seed++);
      }
    }
  }
}

TEST(GpuSelect16, RejectsUnalignedRowsAndInt64Ids) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  DeviceArray<uint16_t> keys(64);
  DeviceArray<float> out_k(4);
  DeviceArray<int32_t> out_i(4);
  gpu::SelectRequest<int32_t> r;
  r.key_format = gpu::KeyFormat::f16;
  r.keys16 = keys.get();
  r.rows = 2;
  r.cols = 20;
  r.ld = 30;  // not a multiple of 8
  r.k = 2;
  r.out_keys = out_k.get();
  r.out_ids = out_i.get();
  EXPECT_THROW(gpu::select_rows(r, resources.limits(), nullptr, resources.stream(0)), Error);
  DeviceArray<int64_t> out_l(4);
  gpu::SelectRequest<int64_t> w;
  w.key_format = gpu::KeyFormat::bf16;
  w.keys16 = keys.get();
  w.rows = 2;
  w.cols = 20;
  w.ld = 32;
  w.k = 2;
  w.out_keys = out_k.get();
  w.out_ids = out_l.get();
  EXPECT_THROW(gpu::select_rows(w, resources.limits(), nullptr, resources.stream(0)), Error);
}

}  // namespace
}  // namespace quiver
