// The graph index ("Graph<R>") against exact search: recall on clustered data, exact results where
// the graph is complete, awkward sizes, duplicates, disconnected clusters, filters, tombstones, adds
// after the build, save/load and corrupt files, and bad input leaving the index unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <set>

#include "cpp/graph/fixed_degree_graph.h"
#include "cpp/index/graph_index.h"
#include "cpp/index/graph_spec.h"
#include "cpp/io/bytes.h"
#include "cpp/io/checksum.h"
#include "cpp/io/index_io.h"
#include "ivf_testing.h"

namespace quiver {
namespace {

using testing::build;
using testing::clustered_vectors;
using testing::recall;
using testing::Results;
using testing::search;
using testing::status_of;

constexpr int64_t kDim = 24, kK = 10;

SearchOptions width(uint32_t w) {
  SearchOptions o;
  o.search_width = w;
  return o;
}

const GraphIndex& as_graph(const Index& index) { return dynamic_cast<const GraphIndex&>(index); }

// Every row reachable from the entry, rows full where n > R, ids in range, no self loops or repeats.
void expect_well_formed(const GraphIndex& index) {
  const FixedDegreeGraph& g = index.graph();
  const int64_t n = g.rows;
  std::vector<uint8_t> reached(static_cast<size_t>(n), 0);
  const int32_t entry = index.entries().front();
  std::deque<int32_t> queue{entry};
  reached[entry] = 1;
  while (!queue.empty()) {
    const int32_t r = queue.front();
    queue.pop_front();
    for (int32_t j = 0; j < g.degree && g.row(r)[j] != kEmptySlot; ++j)
      if (!reached[g.row(r)[j]]) reached[g.row(r)[j]] = 1, queue.push_back(g.row(r)[j]);
  }
  for (int64_t r = 0; r < n; ++r) {
    ASSERT_TRUE(reached[r]) << "row " << r << " unreachable";
    const int32_t used = g.used(r);
    if (n > g.degree) EXPECT_GE(used, g.degree - 1) << "row " << r;
    std::set<int32_t> seen;
    for (int32_t j = 0; j < used; ++j) {
      const int32_t v = g.row(r)[j];
      ASSERT_GE(v, 0);
      ASSERT_LT(v, n);
      EXPECT_NE(v, r) << "self loop";
      EXPECT_TRUE(seen.insert(v).second) << "row " << r << " repeats " << v;
    }
  }
}

// A copy of `index` through its saved payload.
std::unique_ptr<Index> reloaded(Context& context, const Index& index, const char* descriptor, Metric metric) {
  ByteWriter out;
  index.save_payload(out);
  auto loaded = create_index(context, descriptor, kDim, metric);
  ByteReader in(out.bytes().data(), out.bytes().size());
  loaded->load_payload(in, index.count());
  return loaded;
}

class GraphIndexTest : public ::testing::TestWithParam<Metric> {
 protected:
  Context context_{testing::cpu_options()};
};

TEST_P(GraphIndexTest, RecallOnClusteredData) {
  const Metric metric = GetParam();
  constexpr int64_t n = 2013, nq = 200;  // n not a multiple of 32
  const auto x = clustered_vectors(n, kDim, 30, 1);
  const auto q = clustered_vectors(nq, kDim, 30, 2);
  auto flat = build(context_, "Flat", kDim, metric, x);
  auto graph = build(context_, "Graph16", kDim, metric, x);
  EXPECT_EQ(graph->kind(), IndexKind::graph);
  EXPECT_EQ(graph->count(), n);
  expect_well_formed(as_graph(*graph));
  const Results truth = search(*flat, q, kK);
  const Results got = search(*graph, q, kK, width(64));
  EXPECT_GE(recall(got, truth, nq, kK), 0.95);
  // Distances are the metric's, closest first.
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t j = 1; j < kK; ++j) {
      const float a = got.distances[i * kK + j - 1], b = got.distances[i * kK + j];
      EXPECT_TRUE(metric == Metric::l2 ? a <= b : a >= b);
    }
  // A wider pool does not find less.
  EXPECT_GE(recall(search(*graph, q, kK, width(200)), truth, nq, kK), 0.99);
}

// Past 4 x kEntryLayerRows rows, CPU walks start from the entry layer (graph/entry_layer.h), which a
// load builds again: the same results after save and load.
TEST_P(GraphIndexTest, LargeGraphsWalkFromTheEntryLayer) {
  const Metric metric = GetParam();
  const int64_t n = 4 * kEntryLayerRows + 11, nq = 100;
  const auto x = clustered_vectors(n, kDim, 40, 11);
  const auto q = clustered_vectors(nq, kDim, 40, 12);
  auto flat = build(context_, "Flat", kDim, metric, x);
  auto graph = build(context_, "Graph16", kDim, metric, x);
  const Results got = search(*graph, q, kK, width(32));
  EXPECT_GE(recall(got, search(*flat, q, kK), nq, kK), 0.95);
  const Results again = search(*reloaded(context_, *graph, "Graph16", metric), q, kK, width(32));
  EXPECT_EQ(again.ids, got.ids);
  EXPECT_EQ(again.distances, got.distances);
}

// Inserts into such a graph search for each new vector's neighbours from the entry layer too (the
// graph's edges are local, walks from the fixed entries miss neighbours in clustered data), leave
// every row reachable (re-pruning an old row may drop the only edge into another) and remake the
// layer over every row: the grown index is well formed, reaches the recall of the whole build's
// test above, answers as its saved copy does, and nearly every inserted vector finds itself (under
// L2 and cosine; an inner product's best match is not the vector itself).
TEST_P(GraphIndexTest, LargeGraphsInsertFromTheEntryLayer) {
  const Metric metric = GetParam();
  const int64_t n = 4 * kEntryLayerRows + 11, added = n / 10, nq = 100;
  const auto x = clustered_vectors(n + added, kDim, 40, 13);
  const auto q = clustered_vectors(nq, kDim, 40, 14);
  auto flat = build(context_, "Flat", kDim, metric, x);
  auto graph = build(context_, "Graph16", kDim, metric, std::vector<float>(x.begin(), x.begin() + n * kDim));
  graph->add(added, x.data() + n * kDim, nullptr);  // a tenth of the index: inserted, not rebuilt
  expect_well_formed(as_graph(*graph));
  const Results got = search(*graph, q, kK, width(32));
  EXPECT_GE(recall(got, search(*flat, q, kK), nq, kK), 0.95);
  // A saved copy (whose load builds the entry layer over every row) answers the same.
  EXPECT_EQ(search(*reloaded(context_, *graph, "Graph16", metric), q, kK, width(32)).ids, got.ids);
  if (metric == Metric::inner_product) return;
  const Results own = search(*graph, std::vector<float>(x.begin() + n * kDim, x.end()), 1, width(32));
  int64_t found = 0;
  for (int64_t i = 0; i < added; ++i) found += own.ids[i] == n + i;
  EXPECT_GE(found, added - added / 200);
}

TEST_P(GraphIndexTest, CompleteGraphsAreExact) {
  const Metric metric = GetParam();
  for (int64_t n : {1, 2, 7, 33}) {  // n <= R + 1: every row links every other
    const auto x = clustered_vectors(n, kDim, 3, 5);
    const auto q = clustered_vectors(13, kDim, 3, 6);
    auto flat = build(context_, "Flat", kDim, metric, x);
    auto graph = build(context_, "Graph32", kDim, metric, x);
    for (int64_t k : {int64_t{1}, n, n + 5}) {  // k > count pads with -1
      const Results want = search(*flat, q, k);
      const Results got = search(*graph, q, k);
      EXPECT_EQ(got.ids, want.ids) << "n " << n << " k " << k;
      for (size_t i = 0; i < want.distances.size(); ++i) {
        if (std::isinf(want.distances[i])) {
          EXPECT_EQ(got.distances[i], want.distances[i]);
        } else {
          EXPECT_NEAR(got.distances[i], want.distances[i], 1e-3f * std::max(1.0f, std::abs(want.distances[i])));
        }
      }
    }
  }
}

// Vectors of 256 floats or more are built on a reduced copy (cpp/graph/reduced_space.h): the recall
// of searches over the full vectors stays; the graph is well formed and the same whatever the threads.
TEST_P(GraphIndexTest, WideVectorsRecall) {
  const Metric metric = GetParam();
  constexpr int64_t n = 1801, nq = 150, dim = 300;
  const auto x = clustered_vectors(n, dim, 25, 21);
  const auto q = clustered_vectors(nq, dim, 25, 22);
  auto flat = build(context_, "Flat", dim, metric, x);
  auto graph = build(context_, "Graph16", dim, metric, x);
  expect_well_formed(as_graph(*graph));
  const Results truth = search(*flat, q, kK);
  EXPECT_GE(recall(search(*graph, q, kK, width(64)), truth, nq, kK), 0.95);
  EXPECT_GE(recall(search(*graph, q, kK, width(200)), truth, nq, kK), 0.99);
}

INSTANTIATE_TEST_SUITE_P(Metrics, GraphIndexTest,
                         ::testing::Values(Metric::l2, Metric::inner_product, Metric::cosine),
                         [](const auto& info) {
                           return std::string(info.param == Metric::l2 ? "L2"
                                              : info.param == Metric::inner_product ? "InnerProduct"
                                                                                     : "Cosine");
                         });

class GraphIndexL2 : public ::testing::Test {
 protected:
  Context context_{testing::cpu_options()};
  std::vector<float> x_ = clustered_vectors(1500, kDim, 20, 11);
  std::vector<float> q_ = clustered_vectors(100, kDim, 20, 12);
};

TEST_F(GraphIndexL2, DuplicatesAndTiesFindTheRightDistances) {
  // Every vector three times (ties everywhere), plus a block of 60 identical ones.
  std::vector<float> x;
  for (int copy = 0; copy < 3; ++copy) x.insert(x.end(), x_.begin(), x_.begin() + 400 * kDim);
  for (int i = 0; i < 60; ++i) x.insert(x.end(), x_.begin() + 1000 * kDim, x_.begin() + 1001 * kDim);
  auto flat = build(context_, "Flat", kDim, Metric::l2, x);
  auto graph = build(context_, "Graph16", kDim, Metric::l2, x);
  expect_well_formed(as_graph(*graph));
  const Results want = search(*flat, q_, kK);
  const Results got = search(*graph, q_, kK, width(128));
  // With ties the ids may differ; the k-th distance must match (graph results are real points).
  int64_t matched = 0;
  for (int64_t i = 0; i < 100; ++i)
    matched += std::abs(got.distances[i * kK + kK - 1] - want.distances[i * kK + kK - 1]) <=
               1e-3f * std::max(1.0f, want.distances[i * kK + kK - 1]);
  EXPECT_GE(matched, 95);
  // The block of identical vectors is found from its own point.
  const std::vector<float> point(x_.begin() + 1000 * kDim, x_.begin() + 1001 * kDim);
  const Results own = search(*graph, point, kK);
  for (int64_t j = 0; j < kK; ++j) EXPECT_EQ(own.distances[j], 0.0f);
}

TEST_F(GraphIndexL2, DisconnectedClustersAreAllReachable) {
  // Four far-apart groups: the k-NN graph has no edge between them.
  std::vector<float> x;
  for (int g = 0; g < 4; ++g) {
    auto part = clustered_vectors(301, kDim, 3, 20 + g);
    for (int64_t i = 0; i < 301; ++i) part[i * kDim + g] += 1000.0f;
    x.insert(x.end(), part.begin(), part.end());
  }
  std::vector<float> q;
  for (int g = 0; g < 4; ++g) {
    auto part = clustered_vectors(25, kDim, 3, 40 + g);
    for (int64_t i = 0; i < 25; ++i) part[i * kDim + g] += 1000.0f;
    q.insert(q.end(), part.begin(), part.end());
  }
  auto flat = build(context_, "Flat", kDim, Metric::l2, x);
  auto graph = build(context_, "Graph8", kDim, Metric::l2, x);
  expect_well_formed(as_graph(*graph));
  EXPECT_GE(recall(search(*graph, q, kK, width(128)), search(*flat, q, kK), 100, kK), 0.95);
}

TEST_F(GraphIndexL2, FiltersRestrictResultsNotRecall) {
  auto flat = build(context_, "Flat", kDim, Metric::l2, x_);
  auto graph = build(context_, "Graph16", kDim, Metric::l2, x_);
  std::vector<uint8_t> even((1500 + 7) / 8, 0x55);  // even ids
  SearchOptions o = width(96);
  o.filter = IdFilter{even.data(), 1500};
  const Results got = search(*graph, q_, kK, o);
  for (int64_t id : got.ids) EXPECT_EQ(id % 2, 0);
  EXPECT_GE(recall(got, search(*flat, q_, kK, o), 100, kK), 0.95);
  // Three allowed ids: exactly those, then padding (the exact fallback).
  std::vector<uint8_t> three((1500 + 7) / 8, 0);
  for (int id : {5, 700, 1499}) three[id / 8] |= uint8_t(1u << (id % 8));
  o.filter = IdFilter{three.data(), 1500};
  const Results few = search(*graph, q_, kK, o);
  for (int64_t i = 0; i < 100; ++i) {
    std::set<int64_t> ids(few.ids.begin() + i * kK, few.ids.begin() + i * kK + 3);
    EXPECT_EQ(ids, (std::set<int64_t>{5, 700, 1499}));
    for (int64_t j = 3; j < kK; ++j) EXPECT_EQ(few.ids[i * kK + j], -1);
  }
}

TEST_F(GraphIndexL2, RemoveMarksTombstonesThenCompacts) {
  auto graph = build(context_, "Graph16", kDim, Metric::l2, x_);
  std::vector<int64_t> gone;
  for (int64_t id = 0; id < 1500; id += 3) gone.push_back(id);
  gone.push_back(0);       // twice in the call: removed once
  gone.push_back(999999);  // absent: ignored
  EXPECT_EQ(graph->remove(static_cast<int64_t>(gone.size()), gone.data()), 500);
  EXPECT_EQ(graph->count(), 1000);
  EXPECT_EQ(as_graph(*graph).rows(), 1500);  // tombstones, not yet compacted
  EXPECT_EQ(graph->remove(1, gone.data()), 0);
  const Results got = search(*graph, q_, kK);
  for (int64_t id : got.ids) EXPECT_NE(id % 3, 0);
  // Against exact search over what is left.
  std::vector<float> kept;
  std::vector<int64_t> kept_ids;
  for (int64_t i = 0; i < 1500; ++i)
    if (i % 3 != 0) kept.insert(kept.end(), x_.begin() + i * kDim, x_.begin() + (i + 1) * kDim), kept_ids.push_back(i);
  auto flat = build(context_, "Flat", kDim, Metric::l2, kept, kept_ids.data());
  EXPECT_GE(recall(got, search(*flat, q_, kK), 100, kK), 0.95);
  // Half the rows removed: compaction rebuilds without them.
  std::vector<int64_t> more;
  for (int64_t id = 1; id < 1500; id += 3) more.push_back(id);
  EXPECT_EQ(graph->remove(static_cast<int64_t>(more.size()), more.data()), 500);
  EXPECT_EQ(graph->count(), 500);
  EXPECT_EQ(as_graph(*graph).rows(), 500);
  expect_well_formed(as_graph(*graph));
  // A removed id can come back.
  const int64_t id = 0;
  graph->add(1, x_.data(), &id);
  EXPECT_EQ(graph->count(), 501);
  const Results own = search(*graph, std::vector<float>(x_.begin(), x_.begin() + kDim), 1);
  EXPECT_EQ(own.ids[0], 0);
}

TEST_F(GraphIndexL2, AddAfterBuildInsertsWithLocalRepair) {
  auto flat = build(context_, "Flat", kDim, Metric::l2, x_);
  auto graph = create_index(context_, "Graph16", kDim, Metric::l2);
  graph->add(1200, x_.data(), nullptr);
  for (int64_t first = 1200; first < 1500; first += 100)  // each add < half the index: inserts
    graph->add(100, x_.data() + first * kDim, nullptr);
  EXPECT_EQ(graph->count(), 1500);
  expect_well_formed(as_graph(*graph));
  EXPECT_GE(recall(search(*graph, q_, kK), search(*flat, q_, kK), 100, kK), 0.95);
  // Every inserted vector finds itself.
  const std::vector<float> added(x_.begin() + 1200 * kDim, x_.end());
  const Results own = search(*graph, added, 1);
  int64_t found = 0;
  for (int64_t i = 0; i < 300; ++i) found += own.ids[i] == 1200 + i || own.distances[i] == 0.0f;
  EXPECT_EQ(found, 300);
}

TEST_F(GraphIndexL2, SaveLoadRoundTripGivesIdenticalResults) {
  auto graph = build(context_, "Graph16,K24", kDim, Metric::l2, x_);
  const int64_t gone[] = {3, 4, 5};
  graph->remove(3, gone);
  const std::vector<uint8_t> bytes = save_to_bytes(*graph);
  auto loaded = load_from_bytes(context_, bytes.data(), bytes.size());
  EXPECT_EQ(loaded->descriptor(), "Graph16,K24");
  EXPECT_EQ(loaded->count(), graph->count());
  const Results a = search(*graph, q_, kK), b = search(*loaded, q_, kK);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.distances, b.distances);
  EXPECT_EQ(save_to_bytes(*loaded), bytes);
}

// Wide vectors (>= 256 floats) walk their projection on 128 principal directions and re-rank on the
// full vectors: exact distances, the recall of exact search at a wide pool, filters and tombstones
// honoured, and the same answers after inserts and after a save and reload (the directions are a
// function of the stored rows). Cosine walks the projection of the normalised vectors.
TEST(GraphIndexWide, WalksAProjectionAndReranksExactly) {
  constexpr int64_t dim = 300, n = 2500, nq = 60;
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(n, dim, 25, 31), q = clustered_vectors(nq, dim, 25, 32);
  for (Metric metric : {Metric::l2, Metric::cosine}) {
    SCOPED_TRACE(metric == Metric::l2 ? "L2" : "cosine");
    auto flat = build(context, "Flat", dim, metric, x);
    auto graph = build(context, "Graph16", dim, metric, std::vector<float>(x.begin(), x.begin() + 2000 * dim));
    EXPECT_GT(graph->memory().host_bytes, int64_t(2000 * (dim + 128) * 4));  // the projections are kept
    // Inserts: the last 500 rows, in two adds (the index stays below half its size each time).
    graph->add(250, x.data() + 2000 * dim, nullptr);
    std::vector<int64_t> late(250);
    for (int64_t i = 0; i < 250; ++i) late[i] = 2250 + i;
    graph->add(250, x.data() + 2250 * dim, late.data());
    ASSERT_EQ(graph->count(), n);
    const Results truth = search(*flat, q, kK);
    const Results got = search(*graph, q, kK, width(128));
    EXPECT_GE(recall(got, truth, nq, kK), 0.97);
    for (int64_t i = 0; i < nq * kK; ++i) {
      const auto at = std::find(truth.ids.begin(), truth.ids.end(), got.ids[i]);
      if (at != truth.ids.end() && (at - truth.ids.begin()) / kK == i / kK)
        EXPECT_NEAR(got.distances[i], truth.distances[at - truth.ids.begin()], 1e-3f * (1 + std::fabs(got.distances[i])));
    }
    // Tombstones and a filter (even ids) stay out.
    const int64_t gone[] = {got.ids[0], got.ids[1]};
    graph->remove(2, gone);
    std::vector<uint8_t> bits(n / 8 + 1, 0);
    for (int64_t id = 0; id < n; id += 2) bits[id / 8] |= uint8_t(1u << (id % 8));
    SearchOptions filtered = width(64);
    filtered.filter = IdFilter{bits.data(), n};
    for (int64_t id : search(*graph, q, kK, filtered).ids) {
      EXPECT_TRUE(id >= 0 && id % 2 == 0) << id;
      EXPECT_TRUE(id != gone[0] && id != gone[1]);
    }
    const std::vector<uint8_t> bytes = save_to_bytes(*graph);
    auto loaded = load_from_bytes(context, bytes.data(), bytes.size());
    const Results a = search(*graph, q, kK, width(32)), b = search(*loaded, q, kK, width(32));
    EXPECT_EQ(a.ids, b.ids);
    EXPECT_EQ(a.distances, b.distances);
  }
}

// The saved bytes with one adjacency entry replaced and the checksum made right again, so only the
// graph check can catch it.
std::vector<uint8_t> with_neighbour(std::vector<uint8_t> bytes, const Index& index, int32_t value) {
  const auto& g = as_graph(index);
  const size_t header = 4 + 4 + 4 + 4 + 8 + 8 + 4 + index.descriptor().size();
  const size_t adjacency = header + 4 + 8 + 4 + 4 * g.entries().size() +
                           static_cast<size_t>(g.rows()) * (8 + 1 + 4 * index.dim());
  std::memcpy(bytes.data() + adjacency + 4 * 17, &value, 4);  // row 1, slot 1 of Graph16
  const uint64_t sum = checksum64(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  return bytes;
}

TEST_F(GraphIndexL2, CorruptGraphsAreRefused) {
  auto graph = build(context_, "Graph16", kDim, Metric::l2, x_);
  const std::vector<uint8_t> bytes = save_to_bytes(*graph);
  // The patch itself is sound: an in-range id loads.
  const auto fine = with_neighbour(bytes, *graph, 7);
  EXPECT_EQ(status_of([&] { load_from_bytes(context_, fine.data(), fine.size()); }), Status::ok);
  for (int32_t bad : {1500, -2, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()}) {
    const auto corrupt = with_neighbour(bytes, *graph, bad);
    EXPECT_EQ(status_of([&] { load_from_bytes(context_, corrupt.data(), corrupt.size()); }), Status::corrupt_data)
        << bad;
  }
  // Truncated anywhere, or a damaged byte: corrupt, never a crash.
  for (size_t cut : {size_t{40}, bytes.size() / 2, bytes.size() - 9}) {
    EXPECT_EQ(status_of([&] { load_from_bytes(context_, bytes.data(), cut); }), Status::corrupt_data) << cut;
  }
  auto damaged = bytes;
  damaged[damaged.size() / 3] ^= 0x40;
  EXPECT_EQ(status_of([&] { load_from_bytes(context_, damaged.data(), damaged.size()); }), Status::corrupt_data);
}

TEST_F(GraphIndexL2, BadInputLeavesTheIndexUnchanged) {
  for (const char* d : {"Graph1", "Graph1025", "Graph", "Graphx", "Graph32,", "Graph32,K8", "Graph32,K3000",
                        "Graph32,K64,K64", "Graph32,R4", "Graph032x", "Graph32,H0", "Graph32,H48",
                        "Graph32,H1056", "Graph32,H256,K64", "Graph32,H256,H256", "Graph32,H"})
    EXPECT_EQ(status_of([&] { create_index(context_, d, kDim, Metric::l2); }), Status::invalid_argument) << d;
  EXPECT_EQ(parse_graph_descriptor("Graph32").knn_k, 32);
  EXPECT_EQ(parse_graph_descriptor("Graph32,K40").knn_k, 40);
  EXPECT_EQ(parse_graph_descriptor("Graph32").hash_bits, 0);
  EXPECT_EQ(parse_graph_descriptor("Graph32,H256").hash_bits, 256);
  const GraphSpec both = parse_graph_descriptor("Graph32,K40,H64");
  EXPECT_EQ(both.knn_k, 40);
  EXPECT_EQ(both.hash_bits, 64);

  auto graph = create_index(context_, "Graph16", kDim, Metric::l2);
  std::vector<float> d(kK), one(kDim, 1.0f);
  std::vector<int64_t> i(kK);
  EXPECT_EQ(status_of([&] { graph->search(1, one.data(), kK, SearchOptions{}, d.data(), i.data()); }),
            Status::not_trained);
  EXPECT_EQ(status_of([&] { graph->train(1, one.data()); }), Status::ok);
  graph->add(1500, x_.data(), nullptr);
  const Results before = search(*graph, q_, kK);
  auto nan = std::vector<float>(x_.begin(), x_.begin() + 10 * kDim);
  nan[3 * kDim + 5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(status_of([&] { graph->add(10, nan.data(), nullptr); }), Status::invalid_argument);
  const int64_t taken[] = {2000, 5};  // 5 is present
  EXPECT_EQ(status_of([&] { graph->add(2, x_.data(), taken); }), Status::invalid_argument);
  EXPECT_EQ(status_of([&] { graph->search(1, one.data(), 0, SearchOptions{}, d.data(), i.data()); }),
            Status::invalid_argument);
  EXPECT_EQ(graph->count(), 1500);
  const Results after = search(*graph, q_, kK);
  EXPECT_EQ(after.ids, before.ids);
}

TEST_F(GraphIndexL2, RangeSearchIsExact) {
  auto flat = build(context_, "Flat", kDim, Metric::l2, x_);
  auto graph = build(context_, "Graph16", kDim, Metric::l2, x_);
  const RangeResult want = flat->range_search(20, q_.data(), 30.0f, SearchOptions{});
  const RangeResult got = graph->range_search(20, q_.data(), 30.0f, SearchOptions{});
  EXPECT_EQ(got.lims, want.lims);
  for (int64_t q = 0; q < 20; ++q) {
    std::set<int64_t> a(got.ids.begin() + got.lims[q], got.ids.begin() + got.lims[q + 1]);
    std::set<int64_t> b(want.ids.begin() + want.lims[q], want.ids.begin() + want.lims[q + 1]);
    EXPECT_EQ(a, b);
  }
}

TEST_F(GraphIndexL2, SameResultsWhateverTheThreads) {
  testing::expect_same_whatever_the_threads("Graph16", kDim, x_, q_, kK, SearchOptions{}, {1, 2, 3});
}

TEST_F(GraphIndexL2, WideVectorsSameResultsWhateverTheThreads) {
  constexpr int64_t dim = 260;  // built on a reduced copy
  testing::expect_same_whatever_the_threads("Graph16", dim, clustered_vectors(900, dim, 12, 31),
                                            clustered_vectors(60, dim, 12, 32), kK, SearchOptions{}, {1, 2, 3});
}

}  // namespace
}  // namespace quiver
