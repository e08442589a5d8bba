// gpu::knn with a host base streamed through the device in chunks (ResourcesOptions::stream_bytes),
// or arriving in chunks that the search takes as they come (ResourcesOptions::upload_chunk_bytes):
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
#include "cuda/flat/knn_passes.h"
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

// The same ids and, bit for bit, the same distances (k a query); some rows found.
void expect_identical(const Results& got, const Results& want, int64_t k) {
  ASSERT_EQ(got.ids.size(), want.ids.size());
  int64_t found = 0;
  for (size_t i = 0; i < want.ids.size(); ++i) {
    ASSERT_EQ(got.ids[i], want.ids[i]) << "query " << i / k << " rank " << i % k;
    ASSERT_EQ(std::memcmp(&got.distances[i], &want.distances[i], sizeof(float)), 0)
        << "query " << i / k << " rank " << i % k << ": " << got.distances[i] << " vs " << want.distances[i];
    found += want.ids[i] >= 0;
  }
  EXPECT_GT(found, 0);
}

// The rows of `host`, in pinned memory when asked (freed with this), else read in place.
class HostBase {
 public:
  HostBase(const std::vector<float>& host, bool pinned) : data_(host.data()) {
    if (!pinned) return;
    EXPECT_EQ(cudaMallocHost(&pinned_, host.size() * sizeof(float)), cudaSuccess);
    if (pinned_ == nullptr) return;
    std::memcpy(pinned_, host.data(), host.size() * sizeof(float));
    data_ = pinned_;
  }
  ~HostBase() {
    if (pinned_ != nullptr) cudaFreeHost(pinned_);
  }
  HostBase(const HostBase&) = delete;
  HostBase& operator=(const HostBase&) = delete;
  const float* data() const { return data_; }

 private:
  float* pinned_ = nullptr;
  const float* data_;
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

// A case's host inputs: uniform base and queries (plus `offset`; normalised for cosine), the base's
// squared norms where asked, and a filter passing about a quarter of the rows (the last excluded).
struct HostInputs {
  std::vector<float> base, queries, norms;
  std::vector<uint8_t> bits;
  gpu::RowFilter filter;
};

HostInputs make_inputs(int64_t n, int64_t dim, int64_t nq, Metric metric, uint32_t seed, bool host_norms, bool filter,
                       float offset = 0.f) {
  HostInputs in;
  in.base = testing::uniform_vectors(n, dim, seed);
  in.queries = testing::uniform_vectors(nq, dim, seed + 1);
  for (float& v : in.base) v += offset;
  for (float& v : in.queries) v += offset;
  if (metric == Metric::cosine) {
    testing::normalize(in.base, dim);
    testing::normalize(in.queries, dim);
  }
  if (host_norms) {
    in.norms.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      float s = 0.f;
      for (int64_t j = 0; j < dim; ++j) s += in.base[i * dim + j] * in.base[i * dim + j];
      in.norms[size_t(i)] = s;
    }
  }
  if (filter) {
    in.bits = std::vector<uint8_t>(size_t((n + 7) / 8));
    std::mt19937 gen(seed + 2);
    for (auto& b : in.bits) b = uint8_t(gen() & gen());
    in.filter.bits = in.bits.data();
    in.filter.nbits = n - n / 7;
  }
  return in;
}

void run_stream_case(const StreamCase& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "n " << c.n << " dim " << c.dim << " nq " << c.nq << " k " << c.k << " "
                                    << metric_name(c.metric) << " mode " << int(c.mode) << " stream_bytes "
                                    << c.stream_bytes << (c.pinned ? " pinned" : " pageable")
                                    << (c.filter ? " filter" : "") << (c.host_norms ? " host norms" : "")
                                    << (c.device_outputs ? " device outputs" : ""));
  const HostInputs in = make_inputs(c.n, c.dim, c.nq, c.metric, seed, c.host_norms, c.filter);
  const std::vector<float>& base = in.base;
  const std::vector<float>& queries = in.queries;
  const std::vector<float>& norms = in.norms;
  const gpu::RowFilter& filter = in.filter;
  const HostBase host_base(base, c.pinned);
  const float* norms_ptr = c.host_norms ? norms.data() : nullptr;

  gpu::ResourcesOptions whole_options = testing::test_resources_options();
  whole_options.tile_bytes = kTileBytes;
  whole_options.stream_bytes = int64_t(1) << 50;  // never streams
  gpu::ResourcesPtr whole = gpu::make_resources(whole_options);
  gpu::ResourcesOptions stream_options = testing::test_resources_options();
  stream_options.tile_bytes = kTileBytes;
  stream_options.stream_bytes = c.stream_bytes;
  gpu::ResourcesPtr streamed = gpu::make_resources(stream_options);

  const Results expected = search(*whole, c, host_base.data(), norms_ptr, queries, filter);
  const Results got = search(*streamed, c, host_base.data(), norms_ptr, queries, filter);

  const int64_t base_bytes = c.n * c.dim * int64_t(sizeof(float));
  if (c.expect_streamed) {
    EXPECT_LT(gpu::memory_stats(*streamed).peak_bytes, gpu::memory_stats(*whole).peak_bytes)
        << "the base was not streamed";
  }
  EXPECT_GE(gpu::memory_stats(*whole).peak_bytes, base_bytes);
  if (c.mode == ComputeMode::fp16) {
    // fp16 streams through float distance tiles, the unstreamed search through 16-bit ones: the
    // candidates may differ where they are nearly tied (k = kc leaves no margin). Both re-rank
    // exactly: the same ids nearly everywhere.
    int64_t same = 0, found = 0;
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
  expect_identical(got, expected, c.k);
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
  // 300 queries: the fused TF32 pass, one launch a chunk of 16384 rows (2 buffers x (32 floats + a
  // norm) a row); k = 40 from truncated split lists.
  StreamCase fused{testing::sized(70001, 40001), 32, 300, 10};
  fused.stream_bytes = 2 * 16384 * (32 * 4 + 4);
  run_stream_case(fused, seed++);
  fused.k = 40;
  run_stream_case(fused, seed++);
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

// A host base within the budget arrives in chunks (ResourcesOptions::upload_chunk_bytes) that the
// first pass searches as they land: the results are those of the same base resident on the device,
// bit for bit.
struct ArrivingCase {
  int64_t n, dim, nq, k;
  Metric metric = Metric::l2;
  ComputeMode mode = ComputeMode::fp32;
  int64_t chunk_rows = 16384;  // about: upload_chunk_bytes is this many rows' bytes
  int64_t tile_bytes = 0;      // 0: the default tiles
  float offset = 0.f;          // added to every value: data far from the origin (centred passes)
  bool pinned = false;
  bool filter = false;
  bool host_norms = false;
};

void run_arriving_case(const ArrivingCase& c, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "n " << c.n << " dim " << c.dim << " nq " << c.nq << " k " << c.k << " "
                                    << metric_name(c.metric) << " mode " << int(c.mode) << " chunk rows "
                                    << c.chunk_rows << " offset " << c.offset << (c.pinned ? " pinned" : "")
                                    << (c.filter ? " filter" : "") << (c.host_norms ? " host norms" : ""));
  const HostInputs in = make_inputs(c.n, c.dim, c.nq, c.metric, seed, c.host_norms, c.filter, c.offset);
  const std::vector<float>& base = in.base;
  const std::vector<float>& queries = in.queries;
  const std::vector<float>& norms = in.norms;
  const gpu::RowFilter& filter = in.filter;
  gpu::ResourcesOptions options = testing::test_resources_options();
  options.tile_bytes = c.tile_bytes;
  options.upload_chunk_bytes = c.chunk_rows * c.dim * int64_t(sizeof(float));
  gpu::ResourcesPtr resources = gpu::make_resources(options);

  const size_t out = size_t(c.nq * c.k);
  Results want{std::vector<float>(out), std::vector<int64_t>(out)}, got = want;
  {
    testing::DeviceArray<float> device_base(base);
    testing::DeviceArray<float> device_norms(c.host_norms ? norms : std::vector<float>(1));
    gpu::knn(*resources, c.metric, device_base.get(), c.host_norms ? device_norms.get() : nullptr, c.n, c.dim,
             queries.data(), c.nq, c.k, want.distances.data(), want.ids.data(), filter, c.mode);
  }
  EXPECT_EQ(gpu::last_knn_pass_counts().chunks, 0);
  const HostBase host_base(base, c.pinned);
  gpu::knn(*resources, c.metric, host_base.data(), c.host_norms ? norms.data() : nullptr, c.n, c.dim, queries.data(),
           c.nq, c.k, got.distances.data(), got.ids.data(), filter, c.mode);
  EXPECT_GE(gpu::last_knn_pass_counts().chunks, 2) << "the base did not arrive in chunks";
  expect_identical(got, want, c.k);
}

TEST(GpuKnnStream, ArrivingChunksGiveTheResidentResults) {
  QV_REQUIRE_GPU();
  uint32_t seed = 500;
  // The fused TF32 pass (300 queries, dim 32): one launch a chunk of 16384 rows, the last partial.
  const int64_t n = testing::sized(70001, 40001);
  run_arriving_case({n, 32, 300, 10}, seed++);
  run_arriving_case({n, 32, 300, 10, Metric::inner_product}, seed++);
  // Truncated split lists (k = 40: 56 candidates from lists of 32): the bounds of every chunk's splits.
  run_arriving_case({n, 32, 300, 40}, seed++);
  // Far from the origin: the chunks centred into the centred copy as they arrive.
  ArrivingCase far{n, 32, 300, 10};
  far.offset = 40.f;
  run_arriving_case(far, seed++);
  // A filter, the caller's norms, a pinned base; the tf32 mode.
  ArrivingCase rest{n, 32, 300, 10};
  rest.filter = true;
  rest.host_norms = true;
  rest.pinned = true;
  run_arriving_case(rest, seed++);
  rest.mode = ComputeMode::tf32;
  if (!testing::skip_under_sanitizer(true)) run_arriving_case(rest, seed);
  ++seed;
  // Tiled passes (20 queries, dim 33): chunks of whole 8192-row tiles (tiles of 16384 floats).
  ArrivingCase tiled{n, 33, 20, 10};
  tiled.tile_bytes = 64 << 10;
  tiled.chunk_rows = 8192;
  run_arriving_case(tiled, seed++);
  tiled.metric = Metric::cosine;
  tiled.filter = true;
  if (!testing::skip_under_sanitizer(true)) run_arriving_case(tiled, seed);
  ++seed;
  // k above kMaxCertifiedK: the direct pass, chunk by chunk.
  ArrivingCase direct{testing::sized(300007, 131101), 4, 3, 2048};
  direct.tile_bytes = 64 << 10;  // tiles (and chunks) of 131072 rows
  run_arriving_case(direct, seed++);
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
