// gpu::knn with a host base streamed through the device in chunks (ResourcesOptions::stream_bytes):
// the results must be identical (same ids, same distances, bit for bit) to the unstreamed search
// with the same tile size (fp16 aside: the same ids at 99%, see run_stream_case), for n not a
// multiple of the chunk, k = 1 .. 2048, n < k, a filter, host
// norms, pageable and pinned bases, device outputs and every compute mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "cpp/core/error.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver {
namespace {

// Small distance tiles (16384 floats, 65536 under the sanitizer): base tiles of 8192 rows or 64 k, so
// the bases below span several tiles; a stream budget of 1 byte makes every chunk one tile.
const int64_t kTileBytes = testing::small_tile_bytes();

// Bases of several chunks of one 8192-row tile (k <= 10), of 16384 rows (k = 100) and of 131072
// rows (k = 2048), the last chunk partial; under the sanitizer four chunks each (two chunks in
// flight must stay below the whole base, which the tests check through the pool's peak).
int64_t rows_small_k() { return testing::sized(50001, 33001); }
int64_t rows_k100() { return testing::sized(100001, 66001); }
int64_t rows_k2048() { return testing::sized(600007, 393223); }

struct StreamCase {
  int64_t n, dim, nq, k;
  Metric metric = Metric::l2;
  ComputeMode mode = ComputeMode::fp32;
  int64_t stream_bytes = 1;
  bool pinned = false;
  bool filter = false;
  bool host_norms = false;
  bool device_outputs = false;
  bool expect_streamed = true;  // the streamed call's pool peak stays below the unstreamed one's
};

struct Results {
  std::vector<float> distances;
  std::vector<int64_t> ids;
};

Results search(gpu::Resources& resources, const StreamCase& c, const float* base, const float* norms,
               const std::vector<float>& queries, const gpu::RowFilter& filter) {
  Results r{std::vector<float>(size_t(c.nq * c.k), 12345.f), std::vector<int64_t>(size_t(c.nq * c.k), 12345)};
  if (c.device_outputs) {
    testing::DeviceArray<float> d(size_t(c.nq * c.k));
    testing::DeviceArray<int64_t> i(size_t(c.nq * c.k));
    gpu::knn(resources, c.metric, base, norms, c.n, c.dim, queries.data(), c.nq, c.k, d.get(), i.get(), filter,
             c.mode);
    r.distances = d.to_host();
    r.ids = i.to_host();
  } else {
    gpu::knn(resources, c.metric, base, norms, c.n, c.dim, queries.data(), c.nq, c.k, r.distances.data(),
             r.ids.data(), filter, c.mode);
  }
  return r;
}

void run_stream_case(const StreamCase& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "n " << c.n << " dim " << c.dim << " nq " << c.nq << " k " << c.k << " "
                                    << metric_name(c.metric) << " mode " << int(c.mode) << " stream_bytes "
                                    << c.stream_bytes << (c.pinned ? " pinned" : " pageable")
                                    << (c.filter ? " filter" : "") << (c.host_norms ? " host norms" : "")
                                    << (c.device_outputs ? " device outputs" : ""));
  std::vector<float> base = testing::uniform_vectors(c.n, c.dim, seed);
  std::vector<float> queries = testing::uniform_vectors(c.nq, c.dim, seed + 1);
  if (c.metric == Metric::cosine) {
    testing::normalize(base, c.dim);
    testing::normalize(queries, c.dim);
  }
  std::vector<float> norms;
  if (c.host_norms) {
    norms.resize(size_t(c.n));
    for (int64_t i = 0; i < c.n; ++i) {
      float s = 0.f;
      for (int64_t j = 0; j < c.dim; ++j) s += base[i * c.dim + j] * base[i * c.dim + j];
      norms[size_t(i)] = s;
    }
  }
  std::vector<uint8_t> bits;
  gpu::RowFilter filter;
  if (c.filter) {
    bits = std::vector<uint8_t>(size_t((c.n + 7) / 8));
    std::mt19937 gen(seed + 2);
    for (auto& b : bits) b = uint8_t(gen() & gen());  // about a quarter of the rows pass
    filter.bits = bits.data();
    filter.nbits = c.n - c.n / 7;  // the last rows are excluded
  }
  float* pinned = nullptr;
  const float* base_ptr = base.data();
  if (c.pinned) {
    QV_ASSERT_CUDA(cudaMallocHost(&pinned, base.size() * sizeof(float)));
    std::memcpy(pinned, base.data(), base.size() * sizeof(float));
    base_ptr = pinned;
  }
  const float* norms_ptr = c.host_norms ? norms.data() : nullptr;

  gpu::ResourcesOptions whole_options = testing::test_resources_options();
  whole_options.tile_bytes = kTileBytes;
  whole_options.stream_bytes = int64_t(1) << 50;  // never streams
  gpu::ResourcesPtr whole = gpu::make_resources(whole_options);
  gpu::ResourcesOptions stream_options = testing::test_resources_options();
  stream_options.tile_bytes = kTileBytes;
  stream_options.stream_bytes = c.stream_bytes;
  gpu::ResourcesPtr streamed = gpu::make_resources(stream_options);

  const Results expected = search(*whole, c, base_ptr, norms_ptr, queries, filter);
  const Results got = search(*streamed, c, base_ptr, norms_ptr, queries, filter);
  if (pinned != nullptr) cudaFreeHost(pinned);

  const int64_t base_bytes = c.n * c.dim * int64_t(sizeof(float));
  if (c.expect_streamed) {
    EXPECT_LT(gpu::memory_stats(*streamed).peak_bytes, gpu::memory_stats(*whole).peak_bytes)
        << "the base was not streamed";
  }
  EXPECT_GE(gpu::memory_stats(*whole).peak_bytes, base_bytes);
  int64_t found = 0;
  if (c.mode == ComputeMode::fp16) {
    // fp16 streams through float distance tiles, the unstreamed search through 16-bit ones: the
    // candidates may differ where they are nearly tied (k = kc leaves no margin). Both re-rank
    // exactly: the same ids nearly everywhere.
    int64_t same = 0;
    for (int64_t q = 0; q < c.nq; ++q) {
      std::vector<int64_t> a(expected.ids.begin() + q * c.k, expected.ids.begin() + (q + 1) * c.k);
      std::sort(a.begin(), a.end());
      for (int64_t i = 0; i < c.k; ++i) {
        same += std::binary_search(a.begin(), a.end(), got.ids[size_t(q * c.k + i)]) ? 1 : 0;
        found += expected.ids[size_t(q * c.k + i)] >= 0;
      }
    }
    EXPECT_GE(double(same), 0.99 * double(c.nq * c.k));
    EXPECT_GT(found, 0);
    return;
  }
  for (size_t i = 0; i < expected.ids.size(); ++i) {
    ASSERT_EQ(got.ids[i], expected.ids[i]) << "query " << i / c.k << " rank " << i % c.k;
    ASSERT_EQ(std::memcmp(&got.distances[i], &expected.distances[i], sizeof(float)), 0)
        << "query " << i / c.k << " rank " << i % c.k << ": " << got.distances[i] << " vs " << expected.distances[i];
    found += expected.ids[i] >= 0;
  }
  EXPECT_GT(found, 0);
}

TEST(GpuKnnStream, IdenticalToUnstreamedForEveryK) {
  QV_REQUIRE_GPU();
  uint32_t seed = 100;
  // rows_small_k(): chunks of one 8192-row tile, the last one partial; 10 query tiles. k = 100 keeps
  // 256 candidates (fp32's certified pass), so tiles and chunks of 16384 rows: rows_k100().
  for (Metric m : {Metric::l2, Metric::inner_product, Metric::cosine})
    for (int64_t k : {1, 10, 100}) {
      ++seed;
      if (testing::skip_under_sanitizer(m == Metric::cosine || k == 1)) continue;
      run_stream_case({k == 100 ? rows_k100() : rows_small_k(), 33, 20, k, m}, seed - 1);
    }
  // k = 2048: tiles (and chunks) of 131072 rows.
  run_stream_case({rows_k2048(), 4, 3, 2048, Metric::l2}, seed++);
  run_stream_case({rows_k2048(), 4, 3, 2048, Metric::inner_product}, seed++);
  // A budget of two tiles per chunk (2 buffers x (33 floats + a norm) a row).
  StreamCase wide{50001, 33, 20, 10};  // three chunks: two in flight stay below the whole base
  wide.stream_bytes = 2 * 8192 * 2 * (33 * 4 + 4) + 4096;
  run_stream_case(wide, seed++);
  // n < k: one chunk covers the base, so nothing is streamed; still the same results.
  StreamCase small{5, 3, 7, 10};
  small.expect_streamed = false;
  run_stream_case(small, seed++);
  small.k = 2048;
  run_stream_case(small, seed++);
}

TEST(GpuKnnStream, FilterNormsPinnedAndDeviceOutputs) {
  QV_REQUIRE_GPU();
  uint32_t seed = 200;
  for (bool pinned : {false, true}) {
    if (testing::skip_under_sanitizer(pinned)) continue;
    StreamCase c{rows_small_k(), 33, 20, 10};
    c.pinned = pinned;
    run_stream_case(c, seed++);
    c.filter = true;
    run_stream_case(c, seed++);
    c.n = rows_k100();  // k = 100: chunks of 16384 rows (see above)
    c.k = 100;
    c.metric = Metric::inner_product;
    run_stream_case(c, seed++);
    StreamCase h{rows_k100(), 33, 20, 100};
    h.pinned = pinned;
    h.host_norms = true;
    run_stream_case(h, seed++);
    h.device_outputs = true;
    run_stream_case(h, seed++);
  }
}

TEST(GpuKnnStream, EveryComputeMode) {
  QV_REQUIRE_GPU();
  uint32_t seed = 300;
  for (ComputeMode mode : {ComputeMode::fp32, ComputeMode::tf32, ComputeMode::fp16, ComputeMode::bf16}) {
    // fp32: the two tests above run its cases.
    if (testing::skip_under_sanitizer(mode == ComputeMode::fp32)) {
      seed += 8;
      continue;
    }
    for (int64_t k : {1, 10, 100}) {
      if (testing::skip_under_sanitizer(k == 1)) {
        seed += 2;
        continue;
      }
      // rows_k100(): with k = 100 the fast modes' tiles (and chunks) are 16384 rows. Under the
      // sanitizer k = 10 takes rows_small_k() (five chunks of 8192 rows instead of nine), and 5
      // queries (k = 100: still two query tiles, of 3 and 2).
      StreamCase c{k == 10 ? testing::sized(rows_k100(), rows_small_k()) : rows_k100(), 33, testing::sized(20, 5), k};
      c.mode = mode;
      // Under the sanitizer L2 with k = 100 only, inner product (filter, pinned base) with k = 10 only.
      if (!testing::skip_under_sanitizer(k == 10)) run_stream_case(c, seed);
      ++seed;
      c.metric = Metric::inner_product;
      c.filter = true;
      c.pinned = true;
      if (!testing::skip_under_sanitizer(k == 100)) run_stream_case(c, seed);
      ++seed;
    }
    StreamCase big{rows_k2048(), 4, 3, 2048};
    big.mode = mode;
    // tf32's float tiles and re-rank at k = 2048: those of fp16's streamed search (float tiles too).
    if (!testing::skip_under_sanitizer(mode == ComputeMode::tf32)) run_stream_case(big, seed);
    ++seed;
    StreamCase small{5, 3, 7, 10};
    small.mode = mode;
    small.expect_streamed = false;
    run_stream_case(small, seed++);
  }
}

TEST(GpuKnnStream, Fp16OverflowIsRefusedWhenStreamed) {
  QV_REQUIRE_GPU();
  const int64_t n = rows_small_k(), dim = 8, nq = 4, k = 5;
  std::vector<float> base = testing::uniform_vectors(n, dim, 400);
  base[size_t((n - 3) * dim)] = 1e6f;  // in the last chunk
  const std::vector<float> queries = testing::uniform_vectors(nq, dim, 401);
  gpu::ResourcesOptions options = testing::test_resources_options();
  options.tile_bytes = kTileBytes;
  options.stream_bytes = 1;
  gpu::ResourcesPtr resources = gpu::make_resources(options);
  std::vector<float> d(size_t(nq * k), 7.f);
  std::vector<int64_t> ids(size_t(nq * k), 7);
  try {
    gpu::knn(*resources, Metric::l2, base.data(), nullptr, n, dim, queries.data(), nq, k, d.data(), ids.data(),
             gpu::RowFilter{}, ComputeMode::fp16);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument) << e.what();
  }
  EXPECT_EQ(ids[0], 7);  // outputs untouched
}

TEST(GpuKnnStream, NegativeBudgetIsRefused) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions options = testing::test_resources_options();
  options.stream_bytes = -1;
  try {
    gpu::make_resources(options);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument) << e.what();
  }
}

}  // namespace
}  // namespace quiver
