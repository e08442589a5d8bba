// gpu_ivf.h's list storage and search plumbing: adds in batches (lists growing) equal one add,
// remove, append_encoded / list_read round trips, filters with ids on the device and on the host,
// host and device pointers, query tiling under a small memory budget, memory accounting, and bad
// arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cpp/backend/gpu_ivf.h"
#include "cpp/core/error.h"
#include "gpu_testing.h"
#include "ivf_testing.h"

namespace quiver {
namespace {

using testing::DeviceArray;
using testing::HostIvfModel;

struct Results {
  std::vector<float> dist;
  std::vector<int64_t> ids;
};

// nq queries in any memory, results to the host.
Results search(gpu::Resources& resources, const gpu::IvfDevice& ivf, const float* queries, int64_t nq, int64_t k,
               const gpu::IvfSearchOptions& options) {
  Results r{std::vector<float>(size_t(nq * k)), std::vector<int64_t>(size_t(nq * k))};
  gpu::ivf_search(resources, ivf, nq, queries, k, options, r.dist.data(), r.ids.data());
  return r;
}

Results search(gpu::Resources& resources, const gpu::IvfDevice& ivf, const std::vector<float>& queries, int64_t dim,
               int64_t k, const gpu::IvfSearchOptions& options) {
  return search(resources, ivf, queries.data(), int64_t(queries.size()) / dim, k, options);
}

// Per list: ids and codes in order.
struct Lists {
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<uint8_t>> codes;
  std::vector<std::vector<float>> raw;
};

Lists read_lists(gpu::Resources& resources, const gpu::IvfDevice& ivf, int64_t nlist, int64_t dim, bool raw) {
  Lists out;
  for (int64_t l = 0; l < nlist; ++l) {
    const int64_t size = gpu::ivf_list_size(ivf, l);
    out.ids.emplace_back(size_t(size));
    out.codes.emplace_back(size_t(size * gpu::ivf_code_bytes(ivf)));
    out.raw.emplace_back(raw ? size_t(size * dim) : 0);
    gpu::ivf_list_read(resources, ivf, l, out.codes.back().data(), raw ? out.raw.back().data() : nullptr,
                       out.ids.back().data());
  }
  return out;
}

struct StorageCase {
  int64_t n, dim, nlist, pq_m;
  Metric metric;
  bool rotated, keep_raw, ids_on_host;
};

HostIvfModel model_for(const StorageCase& s, const std::vector<float>& data) {
  HostIvfModel m = testing::make_model(data, s.dim, s.nlist, s.pq_m, s.metric, s.rotated, 77);
  m.keep_raw = s.keep_raw;
  m.ids_on_host = s.ids_on_host;
  return m;
}

const StorageCase kSetups[] = {
    {1500, 21, 9, 0, Metric::l2, false, false, false},
    {1500, 21, 9, 0, Metric::l2, true, true, true},
    {1500, 24, 9, 6, Metric::l2, false, true, false},
    {1500, 24, 9, 8, Metric::inner_product, true, false, true},
};

TEST(GpuIvfStorage, BatchedAddsEqualOneAdd) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (const StorageCase& s : kSetups) {
    SCOPED_TRACE(::testing::Message() << "dim " << s.dim << " M " << s.pq_m << " ids_on_host " << s.ids_on_host);
    const auto data = testing::uniform_vectors(s.n, s.dim, 11);
    const auto queries = testing::uniform_vectors(30, s.dim, 12);
    const HostIvfModel model = model_for(s, data);
    std::vector<int64_t> ids(static_cast<size_t>(s.n));
    for (int64_t i = 0; i < s.n; ++i) ids[i] = 1000 + 5 * i;
    auto whole = gpu::make_ivf(resources, model.view());
    gpu::ivf_add(resources, *whole, s.n, data.data(), ids.data(), nullptr);
    auto batched = gpu::make_ivf(resources, model.view());
    const int64_t cuts[] = {0, 1, 17, 300, 301, 1100, s.n};
    for (size_t b = 0; b + 1 < std::size(cuts); ++b) {
      const int64_t b0 = cuts[b], count = cuts[b + 1] - cuts[b];
      gpu::ivf_add(resources, *batched, count, data.data() + b0 * s.dim, ids.data() + b0, nullptr);
    }
    EXPECT_EQ(gpu::ivf_count(*batched), s.n);
    const Lists a = read_lists(resources, *whole, s.nlist, s.dim, s.keep_raw);
    const Lists b = read_lists(resources, *batched, s.nlist, s.dim, s.keep_raw);
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.raw, b.raw);
    gpu::IvfSearchOptions options;
    options.nprobe = 3;
    const Results ra = search(resources, *whole, queries, s.dim, 10, options);
    const Results rb = search(resources, *batched, queries, s.dim, 10, options);
    EXPECT_EQ(ra.ids, rb.ids);
    if (s.rotated && s.pq_m == 0) {
      // Rotated vectors are GEMM results, whose rounding may depend on the batch's size.
      for (size_t l = 0; l < a.codes.size(); ++l) {
        ASSERT_EQ(a.codes[l].size(), b.codes[l].size());
        const auto* x = reinterpret_cast<const float*>(a.codes[l].data());
        const auto* y = reinterpret_cast<const float*>(b.codes[l].data());
        for (size_t i = 0; i < a.codes[l].size() / 4; ++i) ASSERT_NEAR(x[i], y[i], 1e-5) << "list " << l;
      }
      for (size_t i = 0; i < ra.dist.size(); ++i) EXPECT_NEAR(ra.dist[i], rb.dist[i], 1e-4);
    } else {
      EXPECT_EQ(a.codes, b.codes);
      EXPECT_EQ(ra.dist, rb.dist);
    }
    EXPECT_LE(gpu::ivf_memory(*whole).device_bytes, gpu::ivf_memory(*batched).device_bytes);
    EXPECT_GT(gpu::ivf_memory(*whole).device_bytes, 0);
  }
}

// Streamed adds of small batches spread over every list: the arena is rebuilt a logarithmic number
// of times (a rebuild gives every list headroom), not on nearly every add, and holds at most about
// twice what one add of everything holds.
TEST(GpuIvfStorage, StreamedAddsRebuildTheArenaRarely) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const StorageCase s{20000, 8, 64, 0, Metric::l2, false, false, false};
  const auto data = testing::uniform_vectors(s.n, s.dim, 31);
  const HostIvfModel model = model_for(s, data);
  std::vector<int64_t> ids(static_cast<size_t>(s.n));
  for (int64_t i = 0; i < s.n; ++i) ids[i] = i;
  auto whole = gpu::make_ivf(resources, model.view());
  gpu::ivf_add(resources, *whole, s.n, data.data(), ids.data(), nullptr);
  auto streamed = gpu::make_ivf(resources, model.view());
  constexpr int64_t kBatch = 100;
  int rebuilds = 0;
  int64_t bytes = gpu::ivf_memory(*streamed).device_bytes;
  for (int64_t b0 = 0; b0 < s.n; b0 += kBatch) {
    gpu::ivf_add(resources, *streamed, kBatch, data.data() + b0 * s.dim, ids.data() + b0, nullptr);
    const int64_t now = gpu::ivf_memory(*streamed).device_bytes;
    rebuilds += now != bytes;
    bytes = now;
  }
  EXPECT_LE(rebuilds, 25) << "of " << s.n / kBatch << " adds";
  EXPECT_LE(bytes, 2 * gpu::ivf_memory(*whole).device_bytes + 64 * 16 * 64);
  EXPECT_EQ(read_lists(resources, *whole, s.nlist, s.dim, false).ids,
            read_lists(resources, *streamed, s.nlist, s.dim, false).ids);
}

TEST(GpuIvfStorage, RemoveKeepsOrderAndResults) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (const StorageCase& s : kSetups) {
    SCOPED_TRACE(::testing::Message() << "dim " << s.dim << " M " << s.pq_m << " ids_on_host " << s.ids_on_host);
    const auto data = testing::uniform_vectors(s.n, s.dim, 21);
    const auto queries = testing::uniform_vectors(30, s.dim, 22);
    const HostIvfModel model = model_for(s, data);
    auto ivf = testing::filled_ivf(resources, model, data);
    const Lists before = read_lists(resources, *ivf, s.nlist, s.dim, s.keep_raw);
    std::vector<int64_t> gone;
    for (int64_t i = 0; i < s.n; i += 3) gone.push_back(i);
    gone.push_back(s.n + 50);  // not present: ignored
    EXPECT_EQ(gpu::ivf_remove(resources, *ivf, int64_t(gone.size()), gone.data()), (s.n + 2) / 3);
    EXPECT_EQ(gpu::ivf_count(*ivf), s.n - (s.n + 2) / 3);
    EXPECT_EQ(gpu::ivf_remove(resources, *ivf, int64_t(gone.size()), gone.data()), 0);
    const Lists after = read_lists(resources, *ivf, s.nlist, s.dim, s.keep_raw);
    const int64_t cb = gpu::ivf_code_bytes(*ivf);
    for (int64_t l = 0; l < s.nlist; ++l) {
      std::vector<int64_t> kept_ids;
      std::vector<uint8_t> kept_codes;
      for (size_t e = 0; e < before.ids[l].size(); ++e) {
        if (before.ids[l][e] % 3 == 0) continue;
        kept_ids.push_back(before.ids[l][e]);
        kept_codes.insert(kept_codes.end(), before.codes[l].begin() + e * cb, before.codes[l].begin() + (e + 1) * cb);
      }
      EXPECT_EQ(after.ids[l], kept_ids) << "list " << l;
      EXPECT_EQ(after.codes[l], kept_codes) << "list " << l;
    }
    gpu::IvfSearchOptions options;
    options.nprobe = 4;
    const double tol = 5e-5 * double(s.dim) + 1e-4;
    EXPECT_GE(testing::search_and_check(resources, *ivf, model, queries, 20, options, tol), 20);
    // And removed entries can be added again afterwards.
    std::vector<float> again;
    for (int64_t i = 0; i < 5; ++i) again.insert(again.end(), &data[gone[i] * s.dim], &data[(gone[i] + 1) * s.dim]);
    gpu::ivf_add(resources, *ivf, 5, again.data(), gone.data(), nullptr);
    EXPECT_EQ(gpu::ivf_count(*ivf), s.n - (s.n + 2) / 3 + 5);
    EXPECT_GE(testing::search_and_check(resources, *ivf, model, queries, 20, options, tol), 20);
  }
}

TEST(GpuIvfStorage, AppendEncodedRoundTrip) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (const StorageCase& s : kSetups) {
    SCOPED_TRACE(::testing::Message() << "dim " << s.dim << " M " << s.pq_m << " ids_on_host " << s.ids_on_host);
    const auto data = testing::uniform_vectors(s.n, s.dim, 31);
    const auto queries = testing::uniform_vectors(30, s.dim, 32);
    const HostIvfModel model = model_for(s, data);
    std::vector<int64_t> ids(static_cast<size_t>(s.n));
    for (int64_t i = 0; i < s.n; ++i) ids[i] = 7 * i;
    auto source = gpu::make_ivf(resources, model.view());
    gpu::ivf_add(resources, *source, s.n, data.data(), ids.data(), nullptr);
    const Lists lists = read_lists(resources, *source, s.nlist, s.dim, s.keep_raw);
    auto copy = gpu::make_ivf(resources, model.view());
    for (int64_t l = 0; l < s.nlist; ++l) {
      // In two pieces, so the second append grows a list that already has entries.
      const int64_t size = int64_t(lists.ids[l].size()), half = size / 2, cb = gpu::ivf_code_bytes(*source);
      for (int64_t part = 0; part < 2; ++part) {
        const int64_t first = part == 0 ? 0 : half, count = part == 0 ? half : size - half;
        gpu::ivf_append_encoded(resources, *copy, l, count, lists.codes[l].data() + first * cb,
                                s.keep_raw ? lists.raw[l].data() + first * s.dim : nullptr,
                                lists.ids[l].data() + first);
      }
    }
    const Lists again = read_lists(resources, *copy, s.nlist, s.dim, s.keep_raw);
    EXPECT_EQ(lists.ids, again.ids);
    EXPECT_EQ(lists.codes, again.codes);
    EXPECT_EQ(lists.raw, again.raw);
    gpu::IvfSearchOptions options;
    options.nprobe = 5;
    if (s.keep_raw) options.refine_k = 20;
    const Results a = search(resources, *source, queries, s.dim, 10, options);
    const Results b = search(resources, *copy, queries, s.dim, 10, options);
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.dist, b.dist);
  }
}

TEST(GpuIvfStorage, FiltersApplyInsideTheScan) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (const StorageCase& s : kSetups) {
    SCOPED_TRACE(::testing::Message() << "dim " << s.dim << " M " << s.pq_m << " ids_on_host " << s.ids_on_host);
    const auto data = testing::uniform_vectors(s.n, s.dim, 61);
    const auto queries = testing::uniform_vectors(30, s.dim, 62);
    const HostIvfModel model = model_for(s, data);
    std::vector<int64_t> ids(static_cast<size_t>(s.n));
    for (int64_t i = 0; i < s.n; ++i) ids[i] = 2 * i + 1;
    auto ivf = gpu::make_ivf(resources, model.view());
    gpu::ivf_add(resources, *ivf, s.n, data.data(), ids.data(), nullptr);
    // Allows about a quarter of the ids; bits stop short of the largest ids (those are excluded).
    std::vector<uint8_t> bits(size_t(s.n / 8 * 2 - 10), 0);
    std::mt19937 gen(5);
    for (auto& b : bits) b = uint8_t(gen() & gen());
    gpu::IvfSearchOptions options;
    options.filter_bits = bits.data();
    options.filter_nbits = int64_t(bits.size()) * 8;
    const double tol = 5e-5 * double(s.dim) + 1e-4;
    for (int64_t nprobe : {1, 4, 9}) {
      for (int64_t k : {1, 10, 300}) {
        options.nprobe = nprobe;
        testing::search_and_check(resources, *ivf, model, queries, k, options, tol, &bits);
      }
    }
    // Nothing allowed: every result is missing.
    std::vector<uint8_t> none(bits.size(), 0);
    options.filter_bits = none.data();
    const Results r = search(resources, *ivf, queries, s.dim, 5, options);
    for (int64_t id : r.ids) EXPECT_EQ(id, -1);
  }
}

TEST(GpuIvfStorage, HostAndDevicePointers) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (const StorageCase& s : kSetups) {
    SCOPED_TRACE(::testing::Message() << "dim " << s.dim << " M " << s.pq_m << " ids_on_host " << s.ids_on_host);
    const auto data = testing::uniform_vectors(s.n, s.dim, 71);
    const auto queries = testing::uniform_vectors(40, s.dim, 72);
    const HostIvfModel model = model_for(s, data);
    std::vector<int64_t> ids(static_cast<size_t>(s.n));
    for (int64_t i = 0; i < s.n; ++i) ids[i] = i;
    auto host_added = gpu::make_ivf(resources, model.view());
    gpu::ivf_add(resources, *host_added, s.n, data.data(), ids.data(), nullptr);
    auto device_added = gpu::make_ivf(resources, model.view());
    DeviceArray<float> data_dev(data);
    gpu::ivf_add(resources, *device_added, s.n, data_dev.get(), ids.data(), nullptr);
    gpu::IvfSearchOptions options;
    options.nprobe = 3;
    const int64_t k = 12, nq = 40;
    const Results want = search(resources, *host_added, queries, s.dim, k, options);
    DeviceArray<float> q_dev(queries);
    DeviceArray<float> d_dev(static_cast<size_t>(nq * k));
    DeviceArray<int64_t> i_dev(static_cast<size_t>(nq * k));
    gpu::ivf_search(resources, *device_added, nq, q_dev.get(), k, options, d_dev.get(), i_dev.get());
    EXPECT_EQ(i_dev.to_host(), want.ids);
    EXPECT_EQ(d_dev.to_host(), want.dist);
    // Mixed: host distances, device ids.
    std::vector<float> d_host(static_cast<size_t>(nq * k));
    gpu::ivf_search(resources, *device_added, nq, queries.data(), k, options, d_host.data(), i_dev.get());
    EXPECT_EQ(i_dev.to_host(), want.ids);
    EXPECT_EQ(d_host, want.dist);
  }
}

TEST(GpuIvfStorage, SmallTilesGiveTheSameResults) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions small = testing::test_resources_options();
  small.tile_bytes = 64 << 10;  // many query tiles and add batches
  small.staging_bytes = 4 << 10;
  auto tiny = gpu::make_resources(small);
  for (const StorageCase& s : kSetups) {
    SCOPED_TRACE(::testing::Message() << "dim " << s.dim << " M " << s.pq_m << " ids_on_host " << s.ids_on_host);
    const auto data = testing::uniform_vectors(s.n, s.dim, 81);
    const auto queries = testing::uniform_vectors(300, s.dim, 82);
    const HostIvfModel model = model_for(s, data);
    auto ivf = testing::filled_ivf(*tiny, model, data);
    gpu::IvfSearchOptions options;
    options.nprobe = 4;
    const double tol = 5e-5 * double(s.dim) + 1e-4;
    EXPECT_GE(testing::search_and_check(*tiny, *ivf, model, queries, 50, options, tol), 200);
  }
}

// Host queries go up a tile at a time into two buffers in turn, on the copy stream: pageable (through
// staging) and page-locked queries give identical results, over many small tiles those of the same
// queries on the device (the same tiles). With one large tile (IVF-PQ: four) of 9 001 queries, the
// first goes up in uneven pieces, each coarse-searched as it lands: GEMMs of other shapes than the
// device queries' (rounding may differ), so the results are checked against the CPU reference.
TEST(GpuIvfStorage, HostQueriesUploadedTileByTileGiveTheDeviceQueriesResults) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions small = testing::test_resources_options();
  small.tile_bytes = 64 << 10;  // many query tiles
  small.staging_bytes = 4 << 10;
  auto tiny = gpu::make_resources(small);
  struct Run {
    gpu::Resources& resources;
    int64_t nq;
  };
  for (const Run run : {Run{*tiny, 1003}, Run{testing::shared_resources(), 9001}}) {
    for (const StorageCase& s : kSetups) {
      SCOPED_TRACE(::testing::Message() << "nq " << run.nq << " dim " << s.dim << " M " << s.pq_m << " ids_on_host "
                                        << s.ids_on_host);
      const auto data = testing::uniform_vectors(s.n, s.dim, 85);
      const int64_t k = 9, nq = run.nq;
      const auto queries = testing::uniform_vectors(nq, s.dim, 86);
      const HostIvfModel model = model_for(s, data);
      auto ivf = testing::filled_ivf(run.resources, model, data);
      gpu::IvfSearchOptions options;
      options.nprobe = 3;
      const Results pageable = search(run.resources, *ivf, queries.data(), nq, k, options);
      float* pinned = nullptr;
      QV_ASSERT_CUDA(cudaMallocHost(&pinned, queries.size() * sizeof(float)));
      std::copy(queries.begin(), queries.end(), pinned);
      const Results got = search(run.resources, *ivf, pinned, nq, k, options);
      QV_ASSERT_CUDA(cudaFreeHost(pinned));
      EXPECT_EQ(got.ids, pageable.ids);
      EXPECT_EQ(got.dist, pageable.dist);
      if (&run.resources == tiny.get()) {
        DeviceArray<float> q_dev(queries);
        const Results want = search(run.resources, *ivf, q_dev.get(), nq, k, options);
        EXPECT_EQ(pageable.ids, want.ids);
        EXPECT_EQ(pageable.dist, want.dist);
      } else {
        const double tol = 5e-5 * double(s.dim) + 1e-4;
        EXPECT_GE(testing::search_and_check(run.resources, *ivf, model, queries, k, options, tol), nq * 9 / 10);
      }
    }
  }
}

// check_rows: called for every row once, in order, a tile at a time (also with an empty index); a
// check that throws ends the search with its error, and the resources search on as before.
TEST(GpuIvfStorage, HostRowsAreCheckedTileByTile) {
  QV_REQUIRE_GPU();
  auto tiny = testing::make_test_resources(64 << 10);  // many query tiles
  for (const StorageCase& s : kSetups) {
    SCOPED_TRACE(::testing::Message() << "dim " << s.dim << " M " << s.pq_m << " ids_on_host " << s.ids_on_host);
    const auto data = testing::uniform_vectors(s.n, s.dim, 87);
    const int64_t k = 5, nq = 777;
    const auto queries = testing::uniform_vectors(nq, s.dim, 88);
    const HostIvfModel model = model_for(s, data);
    auto ivf = testing::filled_ivf(*tiny, model, data);
    auto empty = gpu::make_ivf(*tiny, model.view());
    gpu::IvfSearchOptions options;
    options.nprobe = 3;
    const Results want = search(*tiny, *ivf, queries, s.dim, k, options);
    for (const gpu::IvfDevice* index : {ivf.get(), empty.get()}) {
      std::vector<std::pair<int64_t, int64_t>> checked;
      options.check_rows = [&](int64_t begin, int64_t end) { checked.emplace_back(begin, end); };
      const Results got = search(*tiny, *index, queries, s.dim, k, options);
      ASSERT_FALSE(checked.empty());
      EXPECT_EQ(checked.front().first, 0);
      EXPECT_EQ(checked.back().second, nq);
      for (size_t i = 1; i < checked.size(); ++i) EXPECT_EQ(checked[i].first, checked[i - 1].second);
      if (index == ivf.get()) {
        EXPECT_GT(checked.size(), size_t(1)) << "one tile: the test's budget is too large";
        EXPECT_EQ(got.ids, want.ids);
      }
    }
    options.check_rows = [](int64_t begin, int64_t end) {
      if (begin <= 500 && 500 < end) fail(Status::invalid_argument, "queries: row 500 is bad");
    };
    try {
      search(*tiny, *ivf, queries, s.dim, k, options);
      ADD_FAILURE() << "the check's error was lost";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("row 500"), std::string::npos) << e.what();
    }
    options.check_rows = nullptr;
    EXPECT_EQ(search(*tiny, *ivf, queries, s.dim, k, options).ids, want.ids);
  }
}

// rows_done: reported after each query tile, increasing, ending with every row, and the rows
// reported are already final in the outputs (device outputs, device ids; host outputs copied a tile
// at a time); with ids on the host, never.
TEST(GpuIvfStorage, RowsDoneAreFinalWhenReported) {
  QV_REQUIRE_GPU();
  gpu::ResourcesOptions small = testing::test_resources_options();
  small.tile_bytes = 64 << 10;  // many query tiles
  auto tiny = gpu::make_resources(small);
  for (const StorageCase& s : kSetups) {
    SCOPED_TRACE(::testing::Message() << "dim " << s.dim << " M " << s.pq_m << " ids_on_host " << s.ids_on_host);
    const auto data = testing::uniform_vectors(s.n, s.dim, 83);
    const int64_t k = 11, nq = 1201;  // IVF-PQ selecting in its scan: about 300 queries a tile
    const auto queries = testing::uniform_vectors(nq, s.dim, 84);
    const HostIvfModel model = model_for(s, data);
    auto ivf = testing::filled_ivf(*tiny, model, data);
    gpu::IvfSearchOptions options;
    options.nprobe = 3;
    const Results want = search(*tiny, *ivf, queries, s.dim, k, options);
    for (bool device_outputs : {true, false}) {
      SCOPED_TRACE(device_outputs ? "device outputs" : "host outputs");
      DeviceArray<float> d_dev(static_cast<size_t>(nq * k));
      DeviceArray<int64_t> i_dev(static_cast<size_t>(nq * k));
      Results host{std::vector<float>(size_t(nq * k)), std::vector<int64_t>(size_t(nq * k))};
      float* distances = device_outputs ? d_dev.get() : host.dist.data();
      int64_t* ids = device_outputs ? i_dev.get() : host.ids.data();
      std::vector<int64_t> reports;
      options.rows_done = [&](int64_t rows) {
        reports.push_back(rows);
        const Results now = device_outputs ? Results{d_dev.to_host(), i_dev.to_host()} : host;
        for (int64_t i = 0; i < rows * k; ++i) {
          ASSERT_EQ(now.ids[size_t(i)], want.ids[size_t(i)]) << "entry " << i << " of rows " << rows;
          ASSERT_EQ(now.dist[size_t(i)], want.dist[size_t(i)]) << "entry " << i << " of rows " << rows;
        }
      };
      gpu::ivf_search(*tiny, *ivf, nq, queries.data(), k, options, distances, ids);
      options.rows_done = nullptr;
      if (s.ids_on_host) {
        EXPECT_TRUE(reports.empty());
        continue;
      }
      ASSERT_GT(reports.size(), 2u);
      EXPECT_TRUE(std::is_sorted(reports.begin(), reports.end()));
      EXPECT_GT(reports.front(), 0);
      EXPECT_EQ(reports.back(), nq);
    }
  }
}

TEST(GpuIvfStorage, EmptyIndexAndBadArguments) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const int64_t dim = 12;
  const auto data = testing::uniform_vectors(100, dim, 91);
  HostIvfModel model = testing::make_model(data, dim, 4, 3, Metric::l2, false, 92);
  auto ivf = gpu::make_ivf(resources, model.view());
  std::vector<float> dist(6);
  std::vector<int64_t> ids(6);
  gpu::IvfSearchOptions options;
  options.nprobe = 2;
  gpu::ivf_search(resources, *ivf, 2, data.data(), 3, options, dist.data(), ids.data());
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(ids[i], -1);
    EXPECT_EQ(dist[i], INFINITY);
  }
  auto status_of = [&](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return e.status();
    }
    return Status::ok;
  };
  const float* q = data.data();
  options.nprobe = 0;
  EXPECT_EQ(status_of([&] { gpu::ivf_search(resources, *ivf, 1, q, 3, options, dist.data(), ids.data()); }),
            Status::invalid_argument);
  options.nprobe = 5;
  EXPECT_EQ(status_of([&] { gpu::ivf_search(resources, *ivf, 1, q, 3, options, dist.data(), ids.data()); }),
            Status::invalid_argument);
  options.nprobe = 2;
  EXPECT_EQ(status_of([&] { gpu::ivf_search(resources, *ivf, 1, q, 0, options, dist.data(), ids.data()); }),
            Status::invalid_argument);
  EXPECT_EQ(status_of([&] { gpu::ivf_search(resources, *ivf, 1, q, 2049, options, dist.data(), ids.data()); }),
            Status::invalid_argument);
  options.refine_k = 10;  // no raw vectors kept
  EXPECT_EQ(status_of([&] { gpu::ivf_search(resources, *ivf, 1, q, 3, options, dist.data(), ids.data()); }),
            Status::invalid_argument);
  options.refine_k = 0;
  EXPECT_EQ(status_of([&] { gpu::ivf_list_size(*ivf, 4); }), Status::invalid_argument);
  model.pq_m = 5;  // does not divide 12
  EXPECT_EQ(status_of([&] { gpu::make_ivf(resources, model.view()); }), Status::invalid_argument);
  model.pq_m = 3;
  model.keep_raw = true;
  auto raw = gpu::make_ivf(resources, model.view());
  std::vector<int64_t> some_ids = {1, 2};
  options.refine_k = 2;  // below k
  gpu::ivf_add(resources, *raw, 2, data.data(), some_ids.data(), nullptr);
  EXPECT_EQ(status_of([&] { gpu::ivf_search(resources, *raw, 1, q, 3, options, dist.data(), ids.data()); }),
            Status::invalid_argument);
  EXPECT_EQ(status_of([&] { gpu::ivf_append_encoded(resources, *raw, 0, 1, nullptr, nullptr, some_ids.data()); }),
            Status::invalid_argument);
  EXPECT_EQ(gpu::ivf_count(*raw), 2);
}

}  // namespace
}  // namespace quiver
