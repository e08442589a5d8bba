// gpu::graph_search (SONG, cuda/graph/): against brute force in double. A queue at least as wide as
// the graph keeps every reachable row, so on a connected graph the search is exact, whatever the
// degree, dimension (every lane-team size, float4 and scalar loads), probes or filter; narrower
// queues are checked by recall on a k-NN graph.
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "cpp/backend/gpu_graph.h"
#include "cpp/core/error.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver::testing {
namespace {

struct Neighbours {
  std::vector<float> distances;
  std::vector<int64_t> ids;
};

// The k best allowed rows per query by (value, row), in double; ids through row_ids when given.
Neighbours brute_force(bool l2, const std::vector<float>& x, const std::vector<float>& q, int64_t dim, int64_t k,
                       const std::vector<uint8_t>* filter, const std::vector<int64_t>* row_ids) {
  const int64_t n = int64_t(x.size()) / dim, nq = int64_t(q.size()) / dim;
  Neighbours out{std::vector<float>(size_t(nq * k)), std::vector<int64_t>(size_t(nq * k), -1)};
  for (int64_t i = 0; i < nq; ++i) {
    std::vector<std::pair<double, int64_t>> all;
    for (int64_t r = 0; r < n; ++r) {
      if (!allowed(filter, r)) continue;
      const double v = exact_value(l2, &q[i * dim], &x[r * dim], dim);
      all.push_back({l2 ? v : -v, r});
    }
    std::sort(all.begin(), all.end());
    for (int64_t j = 0; j < k && j < int64_t(all.size()); ++j) {
      out.distances[i * k + j] = float(l2 ? all[j].first : -all[j].first);
      out.ids[i * k + j] = row_ids ? (*row_ids)[all[j].second] : all[j].second;
    }
  }
  return out;
}

// Each row linked to its `degree` nearest rows (brute force) and, for connectivity, to row + 1.
std::vector<int32_t> knn_graph(bool l2, const std::vector<float>& x, int64_t dim, int64_t degree) {
  const int64_t n = int64_t(x.size()) / dim;
  std::vector<int32_t> g(size_t(n * degree), -1);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<std::pair<double, int64_t>> all;
    for (int64_t r = 0; r < n; ++r)
      if (r != i) {
        const double v = exact_value(l2, &x[i * dim], &x[r * dim], dim);
        all.push_back({l2 ? v : -v, r});
      }
    std::sort(all.begin(), all.end());
    int64_t out = 0;
    g[i * degree + out++] = int32_t((i + 1) % n);
    for (const auto& [v, r] : all) {
      if (out == degree) break;
      if (r != (i + 1) % n) g[i * degree + out++] = int32_t(r);
    }
  }
  return g;
}

Neighbours search(gpu::GraphDevice& graph, const std::vector<float>& q, int64_t dim, int64_t k,
                  const gpu::GraphSearchOptions& options) {
  const int64_t nq = int64_t(q.size()) / dim;
  Neighbours out{std::vector<float>(size_t(nq * k)), std::vector<int64_t>(size_t(nq * k))};
  gpu::graph_search(shared_resources(), graph, nq, q.data(), k, options, out.distances.data(), out.ids.data());
  return out;
}

struct Case {
  int64_t n, dim, degree, k, probes;
  bool l2;
};

TEST(GpuGraphSearch, WideQueueIsExactOnConnectedGraphs) {
  QV_REQUIRE_GPU();
  const Case cases[] = {{300, 1, 3, 1, 1, true},    {301, 3, 7, 10, 2, true},   {257, 45, 13, 20, 1, false},
                        {500, 128, 16, 10, 3, true}, {333, 784, 5, 7, 1, true}, {99, 17, 32, 99, 8, false},
                        {2, 4, 1, 2, 1, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "n " << c.n << " dim " << c.dim << " degree " << c.degree << " k " << c.k
                                      << " probes " << c.probes << (c.l2 ? " L2" : " IP"));
    // Small integers: exact float sums, so ties are exact and their order (by row) is testable.
    const auto x = integer_vectors(c.n, c.dim, 1, 3), q = integer_vectors(sized(37, 5), c.dim, 2, 3);
    const auto adjacency = knn_graph(c.l2, x, c.dim, c.degree);
    std::vector<int64_t> row_ids(size_t(c.n));
    for (int64_t r = 0; r < c.n; ++r) row_ids[r] = 1000 + 3 * r;
    gpu::GraphDevicePtr graph = gpu::make_graph(shared_resources(), c.dim, c.l2 ? Metric::l2 : Metric::inner_product);
    const int32_t entry = int32_t(c.n / 2);
    gpu::graph_upload(shared_resources(), *graph, c.n, x.data(), c.degree, adjacency.data(), row_ids.data(), &entry,
                      1);
    // Small integers are exact in float16 too: the half-precision walk gives the same answers; so
    // do crews (several warps a query: automatic for this small batch, or three).
    for (int variant = 0; variant < 4; ++variant) {
      const bool half = variant == 1;
      const int64_t warps = variant == 2 ? 0 : variant == 3 ? 3 : 1;
      SCOPED_TRACE(::testing::Message() << (half ? "half walk" : "float32 walk") << ", warps a query " << warps);
      gpu::GraphSearchOptions options;
      options.visited = gpu::VisitedSet::hash_table;  // exact: the filters may drop a row now and then
      options.search_width = std::max<int64_t>(c.n, c.k);
      options.probes = c.probes;
      options.half_walk = half;
      options.warps_per_query = warps;
      const Neighbours got = search(*graph, q, c.dim, c.k, options);
      const Neighbours want = brute_force(c.l2, x, q, c.dim, c.k, nullptr, &row_ids);
      EXPECT_EQ(got.ids, want.ids);
      EXPECT_EQ(got.distances, want.distances);

      // Every third row allowed: traversal goes through the others, results skip them.
      std::vector<uint8_t> filter(size_t((c.n + 7) / 8), 0);
      for (int64_t r = 0; r < c.n; r += 3) filter[r / 8] |= uint8_t(1u << (r % 8));
      options.filter = gpu::RowFilter{filter.data(), c.n};
      const Neighbours filtered = search(*graph, q, c.dim, c.k, options);
      const Neighbours want_filtered = brute_force(c.l2, x, q, c.dim, c.k, &filter, &row_ids);
      EXPECT_EQ(filtered.ids, want_filtered.ids);
    }
  }
}

// The results reach every kind of output alike: pageable and page-locked host memory (one copy of
// ids and distances together), device memory, and ids alone (no distances).
TEST(GpuGraphSearch, EveryKindOfOutputGetsTheSameResults) {
  QV_REQUIRE_GPU();
  const int64_t n = 301, dim = 20, degree = 9, k = 7;
  const auto x = integer_vectors(n, dim, 5, 3), q = integer_vectors(sized(29, 5), dim, 6, 3);
  const int64_t nq = int64_t(q.size()) / dim;
  const auto adjacency = knn_graph(true, x, dim, degree);
  gpu::GraphDevicePtr graph = gpu::make_graph(shared_resources(), dim, Metric::l2);
  const int32_t entry = 0;
  gpu::graph_upload(shared_resources(), *graph, n, x.data(), degree, adjacency.data(), nullptr, &entry, 1);
  gpu::GraphSearchOptions options;
  options.search_width = 64;
  const Neighbours want = search(*graph, q, dim, k, options);
  const size_t count = size_t(nq * k);
  std::vector<int64_t> ids_only(count);
  gpu::graph_search(shared_resources(), *graph, nq, q.data(), k, options, nullptr, ids_only.data());
  EXPECT_EQ(ids_only, want.ids);
  float* pinned_d = nullptr;
  int64_t* pinned_i = nullptr;
  QV_ASSERT_CUDA(cudaMallocHost(&pinned_d, count * sizeof(float)));
  QV_ASSERT_CUDA(cudaMallocHost(&pinned_i, count * sizeof(int64_t)));
  gpu::graph_search(shared_resources(), *graph, nq, q.data(), k, options, pinned_d, pinned_i);
  EXPECT_EQ(std::vector<int64_t>(pinned_i, pinned_i + count), want.ids);
  EXPECT_EQ(std::vector<float>(pinned_d, pinned_d + count), want.distances);
  QV_ASSERT_CUDA(cudaFreeHost(pinned_d));
  QV_ASSERT_CUDA(cudaFreeHost(pinned_i));
  DeviceArray<float> device_d(count);
  DeviceArray<int64_t> device_i(count);
  gpu::graph_search(shared_resources(), *graph, nq, q.data(), k, options, device_d.get(), device_i.get());
  EXPECT_EQ(device_i.to_host(), want.ids);
  EXPECT_EQ(device_d.to_host(), want.distances);
}

// Recall of narrow queues over uniform data, float32 and half-precision walks, crews and the visited
// filters; `scale` 1e5 puts the values beyond float16's range, so the half walk reads bfloat16.
// Distances are always exact.
void expect_narrow_queues_find_most_neighbours(float scale) {
  const int64_t n = sized(4001, 1501), dim = 12, degree = 16, k = 10, nq = sized(200, 40);
  auto x = uniform_vectors(n, dim, 3), q = uniform_vectors(nq, dim, 4);
  for (float& v : x) v *= scale;
  for (float& v : q) v *= scale;
  const auto adjacency = knn_graph(true, x, dim, degree);
  gpu::GraphDevicePtr graph = gpu::make_graph(shared_resources(), dim, Metric::l2);
  const std::vector<int32_t> entries = {0, int32_t(n / 4), int32_t(n / 2), int32_t(3 * n / 4)};
  gpu::graph_upload(shared_resources(), *graph, n, x.data(), degree, adjacency.data(), nullptr, entries.data(),
                    int64_t(entries.size()));
  const Neighbours want = brute_force(true, x, q, dim, k, nullptr, nullptr);
  // The visited filters (Bloom, Cuckoo) lose a candidate to a false positive now and then: recall,
  // not exactness; with two probes an iteration's candidates repeat rows, with crews several warps
  // share the walk.
  struct Variant {
    const char* name;
    bool half;
    int64_t warps, probes;
    gpu::VisitedSet visited;
  };
  const Variant variants[] = {{"float32 walk", false, 1, 1, gpu::VisitedSet::hash_table},
                              {"half walk", true, 1, 1, gpu::VisitedSet::hash_table},
                              {"crews", false, 8, 1, gpu::VisitedSet::hash_table},
                              {"Bloom filter, 2 probes", false, 1, 2, gpu::VisitedSet::bloom},
                              {"Cuckoo filter, 2 probes", false, 1, 2, gpu::VisitedSet::cuckoo},
                              {"Cuckoo filter, crews", false, 8, 1, gpu::VisitedSet::cuckoo}};
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    double previous = 0;
    for (int64_t width : {16, 64, 256}) {
      gpu::GraphSearchOptions options;
      options.search_width = width;
      options.half_walk = v.half;
      options.warps_per_query = v.warps;
      options.probes = v.probes;
      options.visited = v.visited;
      const Neighbours got = search(*graph, q, dim, k, options);
      int64_t found = 0;
      for (int64_t i = 0; i < nq; ++i)
        for (int64_t j = 0; j < k; ++j)
          found += std::count(&want.ids[i * k], &want.ids[i * k] + k, got.ids[i * k + j]);
      const double recall = double(found) / double(nq * k);
      EXPECT_GE(recall, previous - 0.01) << "width " << width;
      previous = recall;
      // Results are distinct, sorted, and their distances are exact.
      for (int64_t i = 0; i < nq; ++i)
        for (int64_t j = 0; j < k; ++j) {
          ASSERT_GE(got.ids[i * k + j], 0);
          ASSERT_EQ(std::count(&got.ids[i * k], &got.ids[i * k] + k, got.ids[i * k + j]), 1) << "query " << i;
          const double exact = exact_value(true, &q[i * dim], &x[got.ids[i * k + j] * dim], dim);
          EXPECT_NEAR(got.distances[i * k + j], exact, 1e-4 * (1 + exact));
          if (j > 0) EXPECT_LE(got.distances[i * k + j - 1], got.distances[i * k + j]);
        }
    }
    EXPECT_GE(previous, 0.98);
  }
}

TEST(GpuGraphSearch, NarrowQueueFindsMostNeighbours) {
  QV_REQUIRE_GPU();
  expect_narrow_queues_find_most_neighbours(1.0f);
}

TEST(GpuGraphSearch, HalfWalkBeyondFloat16RangeReadsBfloat16) {
  QV_REQUIRE_GPU();
  expect_narrow_queues_find_most_neighbours(1e5f);
}

// SONG's multi-query per warp: with queries_per_warp 2 or 4 a group of 16 or 8 lanes walks each
// query as a whole warp does with 1. Small integers keep every distance exact whatever the lanes
// a distance takes (dimension 200: 16 lanes one query a warp, 8 with 4 a warp), so with the hash
// table the results are identical. The filters insert an iteration's rows in rounds of the group's
// lanes, so a false positive (rare) may drop another row: a few queries may differ there.
TEST(GpuGraphSearch, QueriesPerWarpTakeTheSameWalks) {
  QV_REQUIRE_GPU();
  struct Shape {
    int64_t dim, degree;
    bool l2;
  };
  // 5: scalar loads, 4-lane teams; 32: float4 loads; 100: 8-lane teams; 200: 16-lane teams.
  const Shape shapes[] = {{5, 8, true}, {32, 16, false}, {100, 12, true}, {200, 16, true}};
  // Odd counts: the last warp's groups run out of queries at different times.
  const int64_t n = sized(1201, 301), nq = sized(203, 13);
  const gpu::VisitedSet visited_sets[] = {gpu::VisitedSet::hash_table, gpu::VisitedSet::bloom,
                                          gpu::VisitedSet::cuckoo};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << "dim " << s.dim << " degree " << s.degree << (s.l2 ? " L2" : " IP"));
    const auto x = integer_vectors(n, s.dim, 21, 3), q = integer_vectors(nq, s.dim, 22, 3);
    const auto adjacency = knn_graph(s.l2, x, s.dim, s.degree);
    gpu::GraphDevicePtr graph = gpu::make_graph(shared_resources(), s.dim, s.l2 ? Metric::l2 : Metric::inner_product);
    const std::vector<int32_t> entries = {0, int32_t(n / 3), int32_t(2 * n / 3)};
    gpu::graph_upload(shared_resources(), *graph, n, x.data(), s.degree, adjacency.data(), nullptr, entries.data(),
                      int64_t(entries.size()));
    std::vector<uint8_t> filter(size_t((n + 7) / 8), 0);
    for (int64_t r = 0; r < n; r += 3) filter[r / 8] |= uint8_t(1u << (r % 8));
    for (gpu::VisitedSet visited : visited_sets) {
      const bool exact = visited == gpu::VisitedSet::hash_table;
      // k near the width: the results are nearly the whole queue.
      for (const auto& [width, k] : {std::pair<int64_t, int64_t>{16, 16}, {48, 47}}) {
        for (int variant = 0; variant < 3; ++variant) {
          const bool filtered = variant == 1, half = variant == 2;
          // Under the sanitizer: one width, and the filter and the half walk with the table only.
          if (skip_under_sanitizer(width != 16 || (variant > 0 && !exact))) continue;
          if (half && !exact) continue;  // the filters' walks are the float32 walk's
          SCOPED_TRACE(::testing::Message() << "visited " << int(visited) << " width " << width << " k " << k
                                            << (filtered ? ", filtered" : "") << (half ? ", half walk" : ""));
          gpu::GraphSearchOptions options;
          options.search_width = width;
          options.visited = visited;
          options.half_walk = half;
          if (filtered) options.filter = gpu::RowFilter{filter.data(), n};
          const Neighbours want = search(*graph, q, s.dim, k, options);
          for (int64_t per_warp : {2, 4}) {
            SCOPED_TRACE(::testing::Message() << per_warp << " queries a warp");
            options.queries_per_warp = per_warp;
            const Neighbours got = search(*graph, q, s.dim, k, options);
            if (!exact) {
              int64_t differ = 0;
              for (int64_t i = 0; i < nq; ++i)
                differ += !std::equal(&got.ids[i * k], &got.ids[i * k] + k, &want.ids[i * k]);
              EXPECT_LE(differ, 1 + nq / 50);
              continue;
            }
            EXPECT_EQ(got.ids, want.ids);
            EXPECT_EQ(got.distances, want.distances);
            // Fewer queries than a warp's groups: the idle groups leave at once, the others go on.
            const std::vector<float> few(q.begin(), q.begin() + 3 * s.dim);
            const Neighbours got_few = search(*graph, few, s.dim, k, options);
            EXPECT_TRUE(std::equal(got_few.ids.begin(), got_few.ids.end(), want.ids.begin()));
            EXPECT_TRUE(std::equal(got_few.distances.begin(), got_few.distances.end(), want.distances.begin()));
          }
        }
      }
    }
  }
}

// The hashed walk (graph_search_codes) the same way: codes are the signs of small integer vectors,
// the graph their k-NN graph; the walk's rows are identical with the hash table.
TEST(GpuGraphSearch, QueriesPerWarpTakeTheSameHashedWalks) {
  QV_REQUIRE_GPU();
  const int64_t n = sized(1001, 257), nq = sized(101, 11), dim = 64, words = dim / 32, degree = 16, width = 32;
  const auto x = integer_vectors(n, dim, 31, 3), q = integer_vectors(nq, dim, 32, 3);
  auto codes_of = [&](const std::vector<float>& v) {
    std::vector<uint32_t> codes(v.size() / 32, 0);
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] > 0) codes[i / 32] |= 1u << (i % 32);
    return codes;
  };
  const auto codes = codes_of(x), query_codes = codes_of(q);
  const auto adjacency = knn_graph(true, x, dim, degree);
  gpu::GraphDevicePtr graph = gpu::make_graph(shared_resources(), words, Metric::l2);
  const int32_t entry = int32_t(n / 2);
  gpu::graph_upload_codes(shared_resources(), *graph, n, codes.data(), degree, adjacency.data(), &entry, 1);
  gpu::GraphSearchOptions options;
  options.search_width = width;
  options.visited = gpu::VisitedSet::hash_table;
  std::vector<int64_t> want(size_t(nq * width)), got(size_t(nq * width));
  gpu::graph_search_codes(shared_resources(), *graph, nq, query_codes.data(), options, want.data());
  for (int64_t per_warp : {2, 4}) {
    options.queries_per_warp = per_warp;
    gpu::graph_search_codes(shared_resources(), *graph, nq, query_codes.data(), options, got.data());
    EXPECT_EQ(got, want) << per_warp << " queries a warp";
  }
}

// A layer (its vectors or codes left to the caller) over graph_rows, linked by adjacency, whose
// walks of a queue of `width` start from the two entries and give two start rows.
gpu::GraphLayer two_start_layer(const std::vector<int32_t>& graph_rows, int64_t degree,
                                const std::vector<int32_t>& adjacency, const int32_t (&entries)[2], int64_t width) {
  gpu::GraphLayer layer;
  layer.rows = int64_t(graph_rows.size());
  layer.degree = degree;
  layer.adjacency = adjacency.data();
  layer.graph_rows = graph_rows.data();
  layer.entries = entries;
  layer.entry_count = 2;
  layer.width = width;
  layer.starts = 2;
  return layer;
}

// The entry layer (graph_upload_layer): walks start from the rows its walk finds, not from the
// graph's entry points. Two components the graph never links (a k-NN graph of each; the second
// offset far away) and the graph's entry point in the first: a query near the second reaches it only
// through the layer, a sample of both components whose walk starts in each, and there its wide
// queue is exact. A later
// graph_upload drops the layer, and the walks stay in the first component again.
TEST(GpuGraphSearch, EntryLayerStartsTheWalkNearTheQuery) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  constexpr int64_t kDim = 20, kDegree = 8, kK = 10, kEvery = 5;
  const int64_t half = sized(600, 150), n = 2 * half;
  std::vector<float> x = integer_vectors(n, kDim, 31, 3);
  for (int64_t i = half * kDim; i < n * kDim; ++i) x[i] += 100.0f;
  const std::vector<float> first(x.begin(), x.begin() + half * kDim), second(x.begin() + half * kDim, x.end());
  std::vector<int32_t> adjacency = knn_graph(true, first, kDim, kDegree);
  for (int32_t r : knn_graph(true, second, kDim, kDegree)) adjacency.push_back(r + int32_t(half));
  std::vector<float> q = integer_vectors(sized(45, 9), kDim, 32, 3);
  for (float& v : q) v += 100.0f;
  const int32_t entry = 0;

  std::vector<int32_t> layer_rows;
  std::vector<float> layer_vectors;
  for (int64_t r = 0; r < n; r += kEvery) {
    layer_rows.push_back(int32_t(r));
    layer_vectors.insert(layer_vectors.end(), x.begin() + r * kDim, x.begin() + (r + 1) * kDim);
  }
  const std::vector<int32_t> layer_adjacency = knn_graph(true, layer_vectors, kDim, kDegree);
  const int32_t layer_entries[] = {0, int32_t(half / kEvery)};  // a sample row in each component
  gpu::GraphLayer layer = two_start_layer(layer_rows, kDegree, layer_adjacency, layer_entries, 16);
  layer.vectors = layer_vectors.data();

  gpu::GraphDevicePtr graph = gpu::make_graph(resources, kDim, Metric::l2);
  gpu::graph_upload(resources, *graph, n, x.data(), kDegree, adjacency.data(), nullptr, &entry, 1);
  const int64_t bare_bytes = gpu::graph_device_bytes(*graph);
  gpu::graph_upload_layer(resources, *graph, layer);
  EXPECT_GT(gpu::graph_device_bytes(*graph), bare_bytes);
  const Neighbours want = brute_force(true, x, q, kDim, kK, nullptr, nullptr);
  gpu::GraphSearchOptions options;
  options.visited = gpu::VisitedSet::hash_table;
  options.search_width = half;
  // One warp a query, crews (automatic for this small batch), two queries a warp.
  for (const auto& [warps, per_warp] : {std::pair<int64_t, int64_t>{1, 1}, {0, 1}, {1, 2}}) {
    SCOPED_TRACE(::testing::Message() << "warps a query " << warps << ", queries a warp " << per_warp);
    options.warps_per_query = warps;
    options.queries_per_warp = per_warp;
    const Neighbours got = search(*graph, q, kDim, kK, options);
    EXPECT_EQ(got.ids, want.ids);
    EXPECT_EQ(got.distances, want.distances);
  }
  options.warps_per_query = 1;
  options.queries_per_warp = 1;
  gpu::graph_upload(resources, *graph, n, x.data(), kDegree, adjacency.data(), nullptr, &entry, 1);
  EXPECT_EQ(gpu::graph_device_bytes(*graph), bare_bytes);
  for (int64_t id : search(*graph, q, kDim, kK, options).ids) EXPECT_LT(id, half);

  // Bad layers leave the graph as it was (no layer).
  std::vector<int32_t> beyond = layer_rows;
  beyond.back() = int32_t(n);
  layer.graph_rows = beyond.data();
  EXPECT_THROW(gpu::graph_upload_layer(resources, *graph, layer), Error);
  layer.graph_rows = layer_rows.data();
  layer.starts = layer.width + 1;
  EXPECT_THROW(gpu::graph_upload_layer(resources, *graph, layer), Error);
  EXPECT_EQ(gpu::graph_device_bytes(*graph), bare_bytes);
}

// The same for a hashed graph, whose layer holds codes and is walked by Hamming distance: the first
// component's codes have bits in word 0 only, the second's in word 1 only, each component a ring with
// random chords the graph never links to the other; queries like the second component are nearest
// (by Hamming distance) to its layer rows, so their walks start and stay there.
TEST(GpuGraphSearch, HashedEntryLayerStartsTheWalkNearTheQuery) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  constexpr int64_t kWords = 2, kDegree = 4, kEvery = 4, kWidth = 16;
  const int64_t half = sized(400, 100), n = 2 * half, nq = sized(40, 8);
  std::mt19937 rng(7);
  auto ring_with_chords = [&](int64_t rows, int64_t first) {
    std::vector<int32_t> adjacency;
    for (int64_t r = 0; r < rows; ++r) {
      adjacency.push_back(int32_t(first + (r + 1) % rows));
      adjacency.push_back(int32_t(first + (r + rows - 1) % rows));
      for (int j = 2; j < kDegree; ++j) adjacency.push_back(int32_t(first + int64_t(rng() % uint64_t(rows))));
    }
    return adjacency;
  };
  std::vector<uint32_t> codes(size_t(n * kWords), 0);
  for (int64_t r = 0; r < n; ++r) codes[r * kWords + (r < half ? 0 : 1)] = uint32_t(rng());
  std::vector<int32_t> adjacency = ring_with_chords(half, 0);
  for (int32_t r : ring_with_chords(half, half)) adjacency.push_back(r);
  std::vector<uint32_t> query_codes(size_t(nq * kWords), 0);
  for (int64_t i = 0; i < nq; ++i) query_codes[i * kWords + 1] = uint32_t(rng());

  std::vector<int32_t> layer_rows;
  std::vector<uint32_t> layer_codes;
  for (int64_t r = 0; r < n; r += kEvery) {
    layer_rows.push_back(int32_t(r));
    layer_codes.insert(layer_codes.end(), codes.begin() + r * kWords, codes.begin() + (r + 1) * kWords);
  }
  const int64_t layer_half = half / kEvery;
  std::vector<int32_t> layer_adjacency = ring_with_chords(layer_half, 0);
  for (int32_t r : ring_with_chords(layer_half, layer_half)) layer_adjacency.push_back(r);
  const int32_t layer_entries[] = {0, int32_t(layer_half)};
  gpu::GraphLayer layer = two_start_layer(layer_rows, kDegree, layer_adjacency, layer_entries, 8);
  layer.codes = layer_codes.data();

  gpu::GraphDevicePtr graph = gpu::make_graph(resources, kWords, Metric::l2);
  const int32_t entry = 0;
  gpu::graph_upload_codes(resources, *graph, n, codes.data(), kDegree, adjacency.data(), &entry, 1);
  gpu::GraphSearchOptions options;
  options.search_width = kWidth;
  std::vector<int64_t> rows(size_t(nq * kWidth));
  gpu::graph_search_codes(resources, *graph, nq, query_codes.data(), options, rows.data());
  for (int64_t r : rows) EXPECT_LT(r, half) << "without the layer the walks stay where they start";

  gpu::graph_upload_layer(resources, *graph, layer);
  gpu::graph_search_codes(resources, *graph, nq, query_codes.data(), options, rows.data());
  for (int64_t r : rows) EXPECT_GE(r, half);

  // A hashed graph's layer needs codes.
  layer.codes = nullptr;
  std::vector<float> vectors(layer_codes.size(), 1.0f);
  layer.vectors = vectors.data();
  EXPECT_THROW(gpu::graph_upload_layer(resources, *graph, layer), Error);
}

TEST(GpuGraphSearch, RejectsBadArguments) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  gpu::GraphDevicePtr graph = gpu::make_graph(resources, 4, Metric::l2);
  const std::vector<float> x(8, 1.0f);
  const int32_t adjacency[] = {1, 5};
  const int32_t entry = 0, bad_entry = 2;
  EXPECT_THROW(gpu::graph_upload(resources, *graph, 2, x.data(), 1, adjacency, nullptr, &entry, 1), Error);
  const int32_t good[] = {1, 0};
  EXPECT_THROW(gpu::graph_upload(resources, *graph, 2, x.data(), 1, good, nullptr, &bad_entry, 1), Error);
  EXPECT_THROW(gpu::graph_upload(resources, *graph, 2, x.data(), 1, good, nullptr, &entry, 0), Error);
  gpu::graph_upload(resources, *graph, 2, x.data(), 1, good, nullptr, &entry, 1);
  float d[4];
  int64_t ids[4];
  gpu::GraphSearchOptions options;
  options.search_width = 2;
  EXPECT_THROW(gpu::graph_search(resources, *graph, 1, x.data(), 3, options, d, ids), Error);  // k > width
  options.probes = 0;
  EXPECT_THROW(gpu::graph_search(resources, *graph, 1, x.data(), 1, options, d, ids), Error);
  options.probes = 1;
  options.warps_per_query = 17;
  EXPECT_THROW(gpu::graph_search(resources, *graph, 1, x.data(), 1, options, d, ids), Error);
  options.warps_per_query = 0;
  options.visited = static_cast<gpu::VisitedSet>(3);
  EXPECT_THROW(gpu::graph_search(resources, *graph, 1, x.data(), 1, options, d, ids), Error);
  options.visited = gpu::VisitedSet::bloom;
  for (int64_t per_warp : {-1, 0, 3, 8}) {  // 1, 2 or 4
    options.queries_per_warp = per_warp;
    EXPECT_THROW(gpu::graph_search(resources, *graph, 1, x.data(), 1, options, d, ids), Error) << per_warp;
  }
  options.queries_per_warp = 2;
  options.warps_per_query = 2;  // several queries a warp, several warps a query
  EXPECT_THROW(gpu::graph_search(resources, *graph, 1, x.data(), 1, options, d, ids), Error);
  options.warps_per_query = 1;
  EXPECT_NO_THROW(gpu::graph_search(resources, *graph, 1, x.data(), 1, options, d, ids));
  options.warps_per_query = 0;
  options.queries_per_warp = 1;
  // 16 000 dimensions: 65 056 bytes of shared memory a query, 4 x as much a warp: beyond every device.
  const int64_t wide = 16000;
  gpu::GraphDevicePtr wide_graph = gpu::make_graph(resources, wide, Metric::l2);
  const std::vector<float> wide_x(size_t(2 * wide), 1.0f);
  gpu::graph_upload(resources, *wide_graph, 2, wide_x.data(), 1, good, nullptr, &entry, 1);
  EXPECT_NO_THROW(gpu::graph_search(resources, *wide_graph, 1, wide_x.data(), 1, options, d, ids));
  options.queries_per_warp = 4;
  EXPECT_THROW(gpu::graph_search(resources, *wide_graph, 1, wide_x.data(), 1, options, d, ids), Error);
  EXPECT_THROW(gpu::make_graph(resources, 4, Metric::cosine), Error);
}

}  // namespace
}  // namespace quiver::testing
