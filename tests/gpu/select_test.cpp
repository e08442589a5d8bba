// cuda/select on the device against a sorted reference: every k bucket, WarpSelect and BlockSelect,
// the two-pass plan, the dense selection, continuing from a previous result, ids given or implicit, a
// column bias, a filter, ties, rows shorter than k, unaligned rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
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

struct Shape {
  int64_t rows, cols, k;
};

struct Options {
  bool largest = false;
  bool ties = false;        // keys from a small integer range
  bool bias = false;
  bool explicit_ids = false;
  bool filter = false;
  int64_t pad = 0;          // ld = cols + pad
  int64_t offset = 0;       // keys start this many floats into the allocation (unaligned rows)
  int sm_count = 0;         // 0: the device's; else a made-up device that changes the plan
};

template <typename V>
struct Result {
  std::vector<float> keys;
  std::vector<V> ids;
};

// The reference: every (x + bias, id) of a row (x - bias when largest, as the kernel ranks
// scale * x + bias), ordered, filtered, the first k, padded.
template <typename V>
Result<V> reference(const std::vector<float>& keys, int64_t ld, const Shape& s, const Options& o,
                    const std::vector<float>& bias, const std::vector<V>& ids, int64_t id_base,
                    const std::vector<uint8_t>& filter) {
  Result<V> out;
  const float pad_key = o.largest ? -gpu::kSentinelKey : gpu::kSentinelKey;
  for (int64_t r = 0; r < s.rows; ++r) {
    std::vector<std::pair<float, V>> all;
    for (int64_t c = 0; c < s.cols; ++c) {
      const float x = keys[r * ld + c];
      const float b = o.bias ? bias[c] : 0.f;
      const float key = o.largest ? b - x : x + b;  // the kernel's rounding: one fmaf of +-x and b
      const V id = o.explicit_ids ? ids[r * ld + c] : V(id_base + c);
      if (o.filter && !((filter[id >> 3] >> (id & 7)) & 1)) continue;
      all.push_back({key, id});
    }
    std::sort(all.begin(), all.end());
    for (int64_t i = 0; i < s.k; ++i) {
      if (i < int64_t(all.size())) {
        out.keys.push_back(o.largest ? -all[i].first : all[i].first);
        out.ids.push_back(all[i].second);
      } else {
        out.keys.push_back(pad_key);
        out.ids.push_back(V(-1));
      }
    }
  }
  return out;
}

template <typename V>
void check_select(const Shape& s, const Options& o, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "rows " << s.rows << " cols " << s.cols << " k " << s.k
                                    << " V " << sizeof(V) * 8 << (o.largest ? " largest" : "")
                                    << (o.ties ? " ties" : "") << (o.bias ? " bias" : "")
                                    << (o.explicit_ids ? " ids" : "") << (o.filter ? " filter" : "")
                                    << " pad " << o.pad << " offset " << o.offset << " sm " << o.sm_count);
  gpu::Resources& resources = testing::shared_resources();
  const int64_t ld = s.cols + o.pad;
  std::vector<float> keys = o.ties ? testing::integer_vectors(s.rows, ld, seed, 3)
                                   : testing::uniform_vectors(s.rows, ld, seed, 100.f);
  std::vector<float> bias = testing::uniform_vectors(1, s.cols, seed + 1);
  std::vector<V> ids(static_cast<size_t>(s.rows * ld));
  std::mt19937 gen(seed + 2);
  const int64_t id_base = 11;
  for (auto& id : ids) id = V(gen() % 1000003);
  std::vector<uint8_t> filter((1000003 + s.cols + id_base) / 8 + 1);
  for (auto& b : filter) b = uint8_t(gen());

  std::vector<float> keys_alloc(keys.size() + size_t(o.offset));
  std::copy(keys.begin(), keys.end(), keys_alloc.begin() + o.offset);
  DeviceArray<float> d_keys(keys_alloc);
  DeviceArray<float> d_bias(bias);
  DeviceArray<V> d_ids(ids);
  DeviceArray<uint8_t> d_filter(filter);
  DeviceArray<float> d_out_keys(size_t(s.rows * s.k));
  DeviceArray<V> d_out_ids(size_t(s.rows * s.k));

  gpu::SelectRequest<V> request;
  request.keys = d_keys.get() + o.offset;
  request.ld = ld;
  request.rows = s.rows;
  request.cols = s.cols;
  request.k = s.k;
  request.largest = o.largest;
  request.column_bias = o.bias ? d_bias.get() : nullptr;
  request.ids = o.explicit_ids ? d_ids.get() : nullptr;
  request.id_base = id_base;
  request.filter = o.filter ? d_filter.get() : nullptr;
  request.filter_bits = int64_t(filter.size()) * 8;
  request.out_keys = d_out_keys.get();
  request.out_ids = d_out_ids.get();
  gpu::SelectLimits limits = resources.limits();
  if (o.sm_count > 0) limits.sm_count = o.sm_count;
  testing::run_select(resources, request, limits);
  const auto expect = reference<V>(keys, ld, s, o, bias, ids, id_base, filter);
  const auto got_keys = d_out_keys.to_host();
  const auto got_ids = d_out_ids.to_host();
  for (int64_t i = 0; i < s.rows * s.k; ++i) {
    ASSERT_EQ(got_keys[i], expect.keys[i]) << "row " << i / s.k << " rank " << i % s.k;
    ASSERT_EQ(got_ids[i], expect.ids[i]) << "row " << i / s.k << " rank " << i % s.k;
  }
}

const Shape kShapes[] = {
    {1, 1, 1},       {3, 31, 7},       {5, 33, 32},       {37, 100, 100},     {64, 1000, 7},
    {100, 4099, 100}, {2, 5000, 1000}, {7, 3001, 2048},   {1, 200000, 100},   {1, 150000, 2048},
    {300, 2500, 1},  {2000, 700, 32},  {4, 70000, 1000},  {16, 20000, 512},   {9, 513, 256},
    // The dense selection (select_dense.h): k a large share of a short row, or beyond it.
    {3, 5120, 1280}, {4, 7168, 1024}, {5, 700, 1000},     {6, 2001, 512},     {3, 3333, 777},
};

TEST(GpuSelect, MatchesSortInEveryBucketInt32) {
  QV_REQUIRE_GPU();
  uint32_t seed = 1;
  for (const Shape& s : kShapes) check_select<int32_t>(s, Options{}, seed++);
}

TEST(GpuSelect, MatchesSortInEveryBucketInt64Largest) {
  QV_REQUIRE_GPU();
  Options o;
  o.largest = true;
  uint32_t seed = 100;
  for (const Shape& s : kShapes) check_select<int64_t>(s, o, seed++);
}

TEST(GpuSelect, TiesGoToTheSmallerId) {
  QV_REQUIRE_GPU();
  Options o;
  o.ties = true;
  uint32_t seed = 200;
  for (const Shape& s : kShapes) check_select<int32_t>(s, o, seed++);
  o.largest = true;
  o.explicit_ids = true;
  for (const Shape& s : kShapes) check_select<int64_t>(s, o, seed++);
}

TEST(GpuSelect, BiasIdsFilterAndUnalignedRows) {
  QV_REQUIRE_GPU();
  uint32_t seed = 300;
  for (const Shape& s : {Shape{50, 3000, 100}, Shape{3, 40000, 1000}, Shape{1, 100000, 10}, Shape{200, 97, 7}}) {
    Options o;
    o.bias = true;
    check_select<int32_t>(s, o, seed++);
    o.largest = true;
    check_select<int32_t>(s, o, seed++);
    o = Options{};
    o.explicit_ids = true;
    o.filter = true;
    check_select<int64_t>(s, o, seed++);
    o = Options{};
    o.filter = true;
    o.bias = true;
    check_select<int32_t>(s, o, seed++);
    o = Options{};
    o.pad = 3;     // ld not a multiple of 4: scalar loads
    o.offset = 1;  // rows not 16-byte aligned
    o.bias = true;
    check_select<int32_t>(s, o, seed++);
  }
}

// The plan depends on the device: a small one (no BlockSelect, no second pass) and a huge one (many
// warps per row and chunks) must give the same results.
TEST(GpuSelect, EveryPlanGivesTheSameResult) {
  QV_REQUIRE_GPU();
  uint32_t seed = 400;
  for (int sm : {1, 4096}) {
    for (const Shape& s : {Shape{3, 20000, 100}, Shape{40, 9000, 1000}, Shape{1, 70000, 2048}, Shape{500, 300, 10},
                           Shape{1, 300001, 26}}) {
      Options o;
      o.sm_count = sm;
      o.ties = true;
      check_select<int32_t>(s, o, seed++);
      o.ties = false;
      o.filter = true;
      check_select<int64_t>(s, o, seed++);
    }
  }
}

// Selecting the second half of each row after the first (prev) equals selecting the whole row; the
// previous result may be the output itself (in place), as the exact search uses it.
TEST(GpuSelect, ContinuesFromAPreviousResult) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (const Shape& s : {Shape{20, 10000, 100}, Shape{2, 60000, 2048}, Shape{100, 64, 7}, Shape{30, 6000, 1024}}) {
    for (bool largest : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "rows " << s.rows << " cols " << s.cols << " k " << s.k
                                        << (largest ? " largest" : ""));
      auto keys = testing::integer_vectors(s.rows, s.cols, uint32_t(s.cols), 50);
      DeviceArray<float> d_keys(keys);
      DeviceArray<float> whole_k(size_t(s.rows * s.k)), part_k(size_t(s.rows * s.k));
      DeviceArray<int32_t> whole_i(size_t(s.rows * s.k)), part_i(size_t(s.rows * s.k));
      const int64_t half = s.cols / 2;
      {
        gpu::Session session(resources);
        const gpu::SelectLimits& limits = resources.limits();
        DeviceArray<char> workspace(size_t(std::max<int64_t>(
            1, gpu::select_workspace_bytes<int32_t>(limits, s.rows, s.cols, s.k))));
        gpu::SelectRequest<int32_t> r;
        r.keys = d_keys.get();
        r.ld = s.cols;
        r.rows = s.rows;
        r.cols = s.cols;
        r.k = s.k;
        r.largest = largest;
        r.out_keys = whole_k.get();
        r.out_ids = whole_i.get();
        gpu::select_rows(r, limits, workspace.get(), resources.stream(0));

        r.cols = half;
        r.out_keys = part_k.get();
        r.out_ids = part_i.get();
        r.keep_missing_as_sentinel = true;
        gpu::select_rows(r, limits, workspace.get(), resources.stream(0));
        r.keys = d_keys.get() + half;
        r.cols = s.cols - half;
        r.id_base = half;
        r.prev_keys = part_k.get();
        r.prev_ids = part_i.get();
        r.keep_missing_as_sentinel = false;
        gpu::select_rows(r, limits, workspace.get(), resources.stream(0));
        session.finish();
      }
      EXPECT_EQ(part_k.to_host(), whole_k.to_host());
      EXPECT_EQ(part_i.to_host(), whole_i.to_host());
    }
  }
}

// The exact search's selections at k = 1024 (select_dense.h against the warp queues it replaces):
// 1280 of 5120 candidates (rows of ids, ties among them), continuing in place from the 1280 before,
// then 1024 of the 1280. Same keys and ids.
TEST(GpuSelect, DenseSelectionEqualsTheWarpQueues) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const int64_t rows = 67, cols = 5120, kc = 1280, k = 1024;
  const auto first = testing::integer_vectors(rows, cols, 11, 400);
  const auto second = testing::integer_vectors(rows, cols, 12, 400);
  std::vector<int32_t> ids(size_t(rows * cols));
  std::mt19937 gen(13);
  for (auto& id : ids) id = int32_t(gen() % 2000000);
  DeviceArray<float> d_first(first), d_second(second);
  DeviceArray<int32_t> d_ids(ids);
  // `rows` rows of `width` keys with their ids: their `take` best into out_k / out_i.
  auto request = [&](const float* keys, const int32_t* key_ids, int64_t width, int64_t take, float* out_k,
                     int32_t* out_i) {
    gpu::SelectRequest<int32_t> r = gpu::select_request(keys, rows, width, take, out_k, out_i);
    r.ids = key_ids;
    return r;
  };
  auto run = [&](bool dense) {
    gpu::set_dense_select_enabled(dense);
    DeviceArray<float> best_k(size_t(rows * kc)), final_k(size_t(rows * k));
    DeviceArray<int32_t> best_i(size_t(rows * kc)), final_i(size_t(rows * k));
    gpu::SelectRequest<int32_t> r = request(d_first.get(), d_ids.get(), cols, kc, best_k.get(), best_i.get());
    r.keep_missing_as_sentinel = true;
    testing::run_select(resources, r, resources.limits());
    r.keys = d_second.get();
    r.prev_keys = best_k.get();
    r.prev_ids = best_i.get();
    testing::run_select(resources, r, resources.limits());
    testing::run_select(resources, request(best_k.get(), best_i.get(), kc, k, final_k.get(), final_i.get()),
                        resources.limits());
    gpu::set_dense_select_enabled(true);
    return std::make_pair(std::make_pair(best_k.to_host(), best_i.to_host()),
                          std::make_pair(final_k.to_host(), final_i.to_host()));
  };
  const auto dense = run(true);
  const auto queues = run(false);
  EXPECT_EQ(dense.first.first, queues.first.first);
  EXPECT_EQ(dense.first.second, queues.first.second);
  EXPECT_EQ(dense.second.first, queues.second.first);
  EXPECT_EQ(dense.second.second, queues.second.second);
}

TEST(GpuSelect, RejectsBadRequests) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  gpu::SelectRequest<int32_t> r;
  r.rows = 1;
  r.cols = 10;
  r.ld = 10;
  r.k = 2049;
  float dummy_k = 0;
  int32_t dummy_i = 0;
  r.out_keys = &dummy_k;
  r.out_ids = &dummy_i;
  EXPECT_THROW(gpu::select_rows(r, resources.limits(), nullptr, resources.stream(0)), Error);
  r.k = 0;
  EXPECT_THROW(gpu::select_rows(r, resources.limits(), nullptr, resources.stream(0)), Error);
  r.k = 5;
  r.ld = 9;
  EXPECT_THROW(gpu::select_rows(r, resources.limits(), nullptr, resources.stream(0)), Error);
}

}  // namespace
}  // namespace quiver
