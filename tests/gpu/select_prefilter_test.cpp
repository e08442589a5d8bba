// cuda/select's threshold pre-filter (select_prefilter.h: long rows, many rows) and the 16-bit key
// path's bias bounds (select_bias_bound.h) against a sorted CPU reference: the results must be
// exactly the plain selection's on awkward data. A made-up device of one multiprocessor makes the
// planner take the pre-filter for a few dozen rows (one warp and one chunk a row).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cuda/core/resources.h"
#include "cuda/select/select.h"
#include "cuda/select/warp_select.h"
#include "gpu_testing.h"
#include "select_testing.h"

namespace quiver {
namespace {

using testing::DeviceArray;

enum class Data {
  uniform,     // distinct values
  ties,        // a few integer values: long runs of equal keys
  descending,  // each row falls along its columns: the sample's threshold keeps too few keys
  special,     // uniform with NaN, +inf and -inf sprinkled in, and rows of NaN / +inf only
};

enum class Format { f32, f16, bf16 };

struct Case {
  int64_t rows, cols, k;
  Format format = Format::f32;
  Data data = Data::uniform;
  bool largest = false;
  bool bias = false;
  bool explicit_ids = false;  // int64 ids only (float keys)
  int64_t offset = 0;         // float keys: rows start this many floats in (unaligned rows)
  int64_t pad = 0;            // ld = cols (rounded up to 8 for 16-bit keys) + pad
  int sm_count = 1;
  bool workspace = true;  // false: no workspace (the 16-bit path then reads the bias for every group)
};

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

float value_of(uint16_t bits, Format f) {
  if (f == Format::bf16) {
    const uint32_t w = uint32_t(bits) << 16;
    float x;
    std::memcpy(&x, &w, sizeof x);
    return x;
  }
  __half h;
  std::memcpy(&h, &bits, sizeof bits);
  return __half2float(h);
}

uint16_t bits_of(float x, Format f) {
  uint16_t bits;
  if (f == Format::bf16) {
    const __nv_bfloat16 b = __float2bfloat16(x);
    std::memcpy(&bits, &b, sizeof bits);
  } else {
    const __half h = __float2half(x);
    std::memcpy(&bits, &h, sizeof bits);
  }
  return bits;
}

// The stored values of row r (before any conversion to 16 bits).
std::vector<float> row_values(const Case& c, int64_t r, std::mt19937& gen) {
  std::uniform_real_distribution<float> uniform(-100.f, 100.f);
  std::vector<float> x(size_t(c.cols));
  for (int64_t col = 0; col < c.cols; ++col) {
    switch (c.data) {
      case Data::uniform: x[size_t(col)] = uniform(gen); break;
      case Data::ties: x[size_t(col)] = float(int(gen() % 7)) - 3.f; break;
      case Data::descending: x[size_t(col)] = float(c.cols - col) * 0.01f + float(r % 3); break;
      case Data::special: {
        const uint32_t u = gen() % 100;
        x[size_t(col)] = u == 0 ? kNan : u == 1 ? kInf : u == 2 ? -kInf : uniform(gen);
        if (r % 5 == 1) x[size_t(col)] = kNan;                          // no key at all
        if (r % 5 == 2 && col % 97 != 0) x[size_t(col)] = kNan;         // fewer keys than k, maybe
        if (r % 5 == 3) x[size_t(col)] = col % 3 == 0 ? kInf : kNan;    // infinities and NaNs only
        break;
      }
    }
  }
  return x;
}

template <typename V>
void check(const Case& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "rows " << c.rows << " cols " << c.cols << " k " << c.k << " format "
                                    << int(c.format) << " data " << int(c.data) << (c.largest ? " largest" : "")
                                    << (c.bias ? " bias" : "") << (c.explicit_ids ? " ids" : "") << " offset "
                                    << c.offset << " pad " << c.pad << " sm " << c.sm_count
                                    << (c.workspace ? "" : " no workspace") << " V " << sizeof(V) * 8);
  gpu::Resources& resources = testing::shared_resources();
  const bool k16 = c.format != Format::f32;
  const int64_t ld = (k16 ? (c.cols + 7) / 8 * 8 : c.cols) + c.pad;
  std::mt19937 gen(seed);
  // Stored values as the kernel reads them (16-bit keys converted back exactly).
  std::vector<float> stored(size_t(c.rows * ld), 0.f);
  std::vector<uint16_t> stored16(size_t(c.rows * ld), bits_of(1e4f, c.format == Format::bf16 ? Format::bf16 : Format::f16));
  for (int64_t r = 0; r < c.rows; ++r) {
    const std::vector<float> x = row_values(c, r, gen);
    for (int64_t col = 0; col < c.cols; ++col) {
      const size_t at = size_t(r * ld + col);
      if (k16) {
        stored16[at] = bits_of(x[size_t(col)], c.format);
        stored[at] = value_of(stored16[at], c.format);
      } else {
        stored[at] = x[size_t(col)];
      }
    }
  }
  std::vector<float> bias(size_t(c.cols));
  std::uniform_real_distribution<float> small(-5.f, 5.f);
  for (auto& b : bias) b = c.data == Data::ties ? float(int(gen() % 3)) : small(gen);
  std::vector<V> ids(size_t(c.rows * ld));
  for (auto& id : ids) id = V(gen() % 100003);
  const float key_scale = k16 ? 0.5f : 1.f;
  const int64_t id_base = 3;

  std::vector<float> keys_alloc(stored.size() + size_t(c.offset));
  std::copy(stored.begin(), stored.end(), keys_alloc.begin() + c.offset);
  DeviceArray<float> d_keys(keys_alloc);
  DeviceArray<uint16_t> d_keys16(stored16);
  DeviceArray<float> d_bias(bias);
  DeviceArray<V> d_ids(ids);
  DeviceArray<float> out_k(size_t(c.rows * c.k));
  DeviceArray<V> out_i(size_t(c.rows * c.k));
  gpu::SelectRequest<V> r;
  r.keys = d_keys.get() + c.offset;
  if (k16) {
    r.key_format = c.format == Format::bf16 ? gpu::KeyFormat::bf16 : gpu::KeyFormat::f16;
    r.keys16 = d_keys16.get();
    r.key_scale = key_scale;
  }
  r.ld = ld;
  r.rows = c.rows;
  r.cols = c.cols;
  r.k = c.k;
  r.largest = c.largest;
  r.column_bias = c.bias ? d_bias.get() : nullptr;
  r.ids = c.explicit_ids ? d_ids.get() : nullptr;
  r.id_base = id_base;
  r.out_keys = out_k.get();
  r.out_ids = out_i.get();
  gpu::SelectLimits limits = resources.limits();
  if (c.sm_count > 0) limits.sm_count = c.sm_count;
  testing::run_select(resources, r, limits, c.workspace);
  const auto got_k = out_k.to_host();
  const auto got_i = out_i.to_host();
  const float in_scale = c.largest ? -key_scale : key_scale;
  for (int64_t row = 0; row < c.rows; ++row) {
    std::vector<std::pair<float, V>> all;
    for (int64_t col = 0; col < c.cols; ++col) {
      const float x = stored[size_t(row * ld + col)];
      const float key = c.bias ? std::fma(in_scale, x, bias[size_t(col)]) : in_scale * x;
      if (std::isnan(key)) continue;  // NaN keys are never selected
      all.push_back({key, c.explicit_ids ? ids[size_t(row * ld + col)] : V(id_base + col)});
    }
    std::sort(all.begin(), all.end());
    for (int64_t i = 0; i < c.k; ++i) {
      const size_t at = size_t(row * c.k + i);
      const bool real = i < int64_t(all.size());
      const float want_k = real ? (c.largest ? -all[size_t(i)].first : all[size_t(i)].first)
                                : (c.largest ? -gpu::kSentinelKey : gpu::kSentinelKey);
      const V want_i = real ? all[size_t(i)].second : V(-1);
      ASSERT_EQ(got_k[at], want_k) << "row " << row << " rank " << i;
      ASSERT_EQ(got_i[at], want_i) << "row " << row << " rank " << i;
    }
  }
}

// Float keys through the pre-filter: every k bucket it serves (32 < k <= 1024, rows of at least 64
// columns an entry of the bucket's queue: select_prefilter.h), and k = 2048 beside it (not served).
TEST(GpuSelectPrefilter, FloatKeysMatchSort) {
  QV_REQUIRE_GPU();
  uint32_t seed = 1;
  for (const Data d : {Data::uniform, Data::ties, Data::descending, Data::special}) {
    // (k <= 32 is not pre-filtered: checked beside the smallest k that is.)
    for (const int64_t k : {int64_t(7), int64_t(32), int64_t(33), int64_t(100), int64_t(256)}) {
      check<int32_t>({30, 20001, k, Format::f32, d}, seed++);
    }
    Case c{27, 16411, 100, Format::f32, d};
    c.largest = true;
    c.bias = true;
    check<int32_t>(c, seed++);
  }
}

TEST(GpuSelectPrefilter, LargeKAndRowsShorterThanTheSample) {
  QV_REQUIRE_GPU();
  uint32_t seed = 100;
  check<int32_t>({26, 70001, 1000, Format::f32, Data::uniform}, seed++);
  check<int32_t>({26, 66000, 1024, Format::f32, Data::descending}, seed++);
  check<int32_t>({25, 66000, 1024, Format::f32, Data::ties}, seed++);
  check<int32_t>({25, 40000, 2048, Format::f32, Data::uniform}, seed++);  // above the pre-filter's k
  check<int32_t>({40, 3000, 2048, Format::f32, Data::uniform}, seed++);   // n < k
  check<int32_t>({40, 16384, 1, Format::f32, Data::special}, seed++);
}

TEST(GpuSelectPrefilter, Int64IdsUnalignedRowsAndEveryPlan) {
  QV_REQUIRE_GPU();
  uint32_t seed = 200;
  for (const int sm : {1, 0}) {  // the made-up device (pre-filtered) and the real one (not: few rows)
    Case c{33, 17003, 100, Format::f32, Data::uniform};
    c.sm_count = sm;
    c.explicit_ids = true;
    check<int64_t>(c, seed++);
    c.explicit_ids = false;
    c.offset = 1;
    c.pad = 3;
    c.bias = true;
    check<int32_t>(c, seed++);
    c.data = Data::ties;
    c.largest = true;
    check<int64_t>(c, seed++);
  }
}

// 16-bit keys: the bias bounds (with and without the pre-filter), with no bias, with no workspace.
TEST(GpuSelectPrefilter, SixteenBitKeysMatchSort) {
  QV_REQUIRE_GPU();
  uint32_t seed = 300;
  for (const Format f : {Format::f16, Format::bf16}) {
    for (const Data d : {Data::uniform, Data::ties, Data::descending, Data::special}) {
      for (const int64_t k : {int64_t(1), int64_t(32), int64_t(64), int64_t(100)}) {
        Case c{30, 20003, k, f, d};
        c.bias = true;
        check<int32_t>(c, seed++);
      }
      Case c{28, 16390, 256, f, d};  // pre-filtered, largest first, no bias
      c.largest = true;
      check<int32_t>(c, seed++);
      c = Case{6, 5003, 64, f, d};  // bias bounds without the pre-filter (few rows)
      c.bias = true;
      c.sm_count = 0;
      check<int32_t>(c, seed++);
      c.largest = true;
      c.pad = 8;
      check<int32_t>(c, seed++);
      c.workspace = false;  // one chunk a row, so no workspace is needed but for the bounds
      c.sm_count = 1;
      check<int32_t>(c, seed++);
    }
    Case c{26, 66001, 1000, f, Data::uniform};
    c.bias = true;
    check<int32_t>(c, seed++);
    c = Case{9, 1029, 2048, f, Data::special};  // n < k, shortest row with bounds
    c.bias = true;
    c.sm_count = 0;
    check<int32_t>(c, seed++);
    c = Case{5, 1023, 2048, f, Data::uniform};  // one column short of the bounds
    c.bias = true;
    check<int32_t>(c, seed++);
  }
}

// The exact search's use: one selection per column tile, each continuing from the previous result
// (16-bit keys with a bias: bounds, no pre-filter after the first tile), against one sort.
TEST(GpuSelectPrefilter, SixteenBitTilesContinueExactly) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (const Format f : {Format::f16, Format::bf16}) {
    const int64_t rows = 30, cols = 40000, tile = 17000, k = 32, ld = 40000;
    std::mt19937 gen(f == Format::f16 ? 7 : 8);
    std::uniform_real_distribution<float> uniform(-60.f, 60.f), small(0.f, 40.f);
    std::vector<uint16_t> keys(size_t(rows * ld));
    for (auto& x : keys) x = bits_of(uniform(gen), f);
    std::vector<float> bias(static_cast<size_t>(cols));
    for (auto& b : bias) b = small(gen);
    DeviceArray<uint16_t> d_keys(keys);
    DeviceArray<float> d_bias(bias);
    DeviceArray<float> best_k(size_t(rows * k));
    DeviceArray<int32_t> best_i(size_t(rows * k));
    gpu::SelectLimits limits = resources.limits();
    limits.sm_count = 1;
    const float scale = 0.25f;
    {
      gpu::Session session(resources);
      const int64_t bytes = gpu::select_workspace_bytes<int32_t>(limits, rows, tile, k);
      DeviceArray<char> workspace(size_t(std::max<int64_t>(bytes, 1)));
      for (int64_t c0 = 0; c0 < cols; c0 += tile) {
        gpu::SelectRequest<int32_t> r;
        r.key_format = f == Format::bf16 ? gpu::KeyFormat::bf16 : gpu::KeyFormat::f16;
        r.keys16 = d_keys.get() + c0;
        r.key_scale = scale;
        r.ld = ld;
        r.rows = rows;
        r.cols = std::min(tile, cols - c0);
        r.k = k;
        r.column_bias = d_bias.get() + c0;
        r.id_base = c0;
        r.prev_keys = c0 > 0 ? best_k.get() : nullptr;
        r.prev_ids = c0 > 0 ? best_i.get() : nullptr;
        r.out_keys = best_k.get();
        r.out_ids = best_i.get();
        r.keep_missing_as_sentinel = true;
        gpu::select_rows(r, limits, bytes > 0 ? workspace.get() : nullptr, resources.stream(0));
      }
      session.finish();
    }
    const auto got_k = best_k.to_host();
    const auto got_i = best_i.to_host();
    for (int64_t row = 0; row < rows; ++row) {
      std::vector<std::pair<float, int32_t>> all;
      for (int64_t col = 0; col < cols; ++col)
        all.push_back({std::fma(scale, value_of(keys[size_t(row * ld + col)], f), bias[size_t(col)]), int32_t(col)});
      std::sort(all.begin(), all.end());
      for (int64_t i = 0; i < k; ++i) {
        ASSERT_EQ(got_k[size_t(row * k + i)], all[size_t(i)].first) << "row " << row << " rank " << i;
        ASSERT_EQ(got_i[size_t(row * k + i)], all[size_t(i)].second) << "row " << row << " rank " << i;
      }
    }
  }
}

}  // namespace
}  // namespace quiver
