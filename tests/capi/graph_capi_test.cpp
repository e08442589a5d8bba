// The graph index ("Graph<R>") through the C API: creation and its errors, recall against exact
// search, search_width as the recall knob, filters, remove, add after the build, save/load round trips
// through files and buffers, corrupt data, bad input leaving the index as it was, and the GPU walk's
// parameters (graph_*), which a CPU search ignores.
#include "test_util.h"

namespace {

using namespace qvtest;

constexpr int64_t kDim = 20, kN = 1203, kNq = 60;
constexpr uint32_t kK = 10;

class CapiGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext(2);
    ASSERT_TRUE(ctx_);
    x_ = ClusteredVectors(kN, kDim, 12, 3, 4);
    q_ = ClusteredVectors(kNq, kDim, 12, 3, 5);
  }
  Index Built(const char* descriptor, qv_metric_t metric = QV_METRIC_L2) {
    Index index = MakeIndex(ctx_.get(), kDim, metric, descriptor);
    EXPECT_TRUE(index) << descriptor << ": " << qv_last_error_message();
    if (index) EXPECT_EQ(qv_index_add(index.get(), kN, x_.data(), nullptr), QV_OK) << qv_last_error_message();
    return index;
  }
  qv_search_params_t Width(uint32_t w) {
    qv_search_params_t p;
    qv_search_params_init(&p);
    p.search_width = w;
    return p;
  }
  Context ctx_;
  std::vector<float> x_, q_;
};

TEST_F(CapiGraph, CreateNamesWhatIsWrongWithTheDescriptor) {
  qv_index_t* index = nullptr;
  for (const char* bad : {"Graph1", "Graph1025", "Graph", "GraphK", "Graph32,K4", "Graph32,Q5"}) {
    EXPECT_EQ(qv_index_create(ctx_.get(), bad, kDim, QV_METRIC_L2, &index), QV_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(std::string(qv_last_error_message()).find("Graph<R>"), std::string::npos) << qv_last_error_message();
    EXPECT_EQ(index, nullptr);
  }
  // The generic message lists the graph syntax too.
  EXPECT_EQ(qv_index_create(ctx_.get(), "HNSW32", kDim, QV_METRIC_L2, &index), QV_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qv_last_error_message()).find("Graph<R>"), std::string::npos);
  QV_ASSERT_OK(qv_index_create(ctx_.get(), "Graph32,K48", kDim, QV_METRIC_COSINE, &index));
  Index owned(index);
  qv_index_info_t info;
  qv_index_info_init(&info);
  QV_ASSERT_OK(qv_index_info(index, &info));
  EXPECT_EQ(info.is_trained, 1);
  EXPECT_EQ(info.count, 0);
  EXPECT_STREQ(info.descriptor, "Graph32,K48");
  EXPECT_EQ(info.device, QV_DEVICE_CPU);
}

TEST_F(CapiGraph, RecallAgainstExactSearchGrowsWithSearchWidth) {
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    Index flat = MakeIndex(ctx_.get(), kDim, metric, "Flat");
    QV_ASSERT_OK(qv_index_add(flat.get(), kN, x_.data(), nullptr));
    Index graph = Built("Graph16", metric);
    ASSERT_TRUE(graph);
    EXPECT_EQ(Count(graph.get()), kN);
    Results want, narrow, wide;
    QV_ASSERT_OK(Search(flat.get(), q_, kDim, kK, nullptr, &want));
    const qv_search_params_t p10 = Width(10), p128 = Width(128);
    QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, &p10, &narrow));
    QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, &p128, &wide));
    EXPECT_GE(IdOverlap(wide, want, kNq, kK), 0.98) << MetricName(metric);
    EXPECT_GE(IdOverlap(wide, want, kNq, kK), IdOverlap(narrow, want, kNq, kK)) << MetricName(metric);
    // Distances are the metric's: each returned id carries its own (float64 reference).
    for (int64_t q = 0; q < kNq; ++q)
      for (uint32_t j = 0; j < kK; ++j) {
        const int64_t id = wide.ids[q * kK + j];
        ASSERT_GE(id, 0);
        std::vector<float> qn(q_.begin() + q * kDim, q_.begin() + (q + 1) * kDim), xn(x_.begin() + id * kDim,
                                                                                       x_.begin() + (id + 1) * kDim);
        const double ref = RefDistance(metric, qn.data(), xn.data(), kDim);
        EXPECT_NEAR(wide.distances[q * kK + j], ref, 1e-3 * std::max(1.0, std::abs(ref)));
      }
  }
}

TEST_F(CapiGraph, FilterAndRemoveAreHonoured) {
  Index graph = Built("Graph16");
  ASSERT_TRUE(graph);
  std::vector<uint8_t> bits((kN + 7) / 8, 0);
  for (int64_t id = 0; id < kN; id += 4) bits[id / 8] |= uint8_t(1u << (id % 8));
  qv_search_params_t p = Width(64);
  p.filter = bits.data();
  p.filter_bits = kN;
  Results got;
  QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, &p, &got));
  for (int64_t id : got.ids) EXPECT_EQ(id % 4, 0);

  std::vector<int64_t> gone;
  for (int64_t id = 1; id < kN; id += 2) gone.push_back(id);
  int64_t removed = -1;
  QV_ASSERT_OK(qv_index_remove(graph.get(), static_cast<int64_t>(gone.size()), gone.data(), &removed));
  EXPECT_EQ(removed, static_cast<int64_t>(gone.size()));
  EXPECT_EQ(Count(graph.get()), kN - removed);
  QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, nullptr, &got));
  for (int64_t id : got.ids) EXPECT_EQ(id % 2, 0);
}

TEST_F(CapiGraph, AddAfterBuildFindsTheNewVectors) {
  Index graph = Built("Graph16");
  ASSERT_TRUE(graph);
  const std::vector<float> more = ClusteredVectors(50, kDim, 12, 3, 9);
  std::vector<int64_t> ids(50);
  for (int64_t i = 0; i < 50; ++i) ids[i] = 100000 + i;
  QV_ASSERT_OK(qv_index_add(graph.get(), 50, more.data(), ids.data()));
  EXPECT_EQ(Count(graph.get()), kN + 50);
  Results own;
  QV_ASSERT_OK(Search(graph.get(), more, kDim, 1, nullptr, &own));
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(own.ids[i], 100000 + i);
}

TEST_F(CapiGraph, SaveAndLoadGiveIdenticalResults) {
  Index graph = Built("Graph16");
  ASSERT_TRUE(graph);
  const int64_t gone[] = {7, 8};
  QV_ASSERT_OK(qv_index_remove(graph.get(), 2, gone, nullptr));
  Results before;
  QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, nullptr, &before));

  void* data = nullptr;
  size_t size = 0;
  QV_ASSERT_OK(qv_index_save_buffer(graph.get(), &data, &size));
  Buffer buffer(data);
  qv_index_t* loaded = nullptr;
  QV_ASSERT_OK(qv_index_load_buffer(ctx_.get(), data, size, &loaded));
  Index from_buffer(loaded);
  Results after;
  QV_ASSERT_OK(Search(from_buffer.get(), q_, kDim, kK, nullptr, &after));
  EXPECT_TRUE(after == before);
  EXPECT_EQ(Count(from_buffer.get()), kN - 2);

  // Damaged or cut short: corrupt data, never a crash.
  std::vector<uint8_t> bytes(static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
  for (size_t cut : {size / 3, size - 1}) {
    loaded = nullptr;
    EXPECT_EQ(qv_index_load_buffer(ctx_.get(), bytes.data(), cut, &loaded), QV_ERR_CORRUPT_DATA);
    EXPECT_EQ(loaded, nullptr);
  }
  bytes[size - 100] ^= 0x01;
  EXPECT_EQ(qv_index_load_buffer(ctx_.get(), bytes.data(), size, &loaded), QV_ERR_CORRUPT_DATA);
}

TEST_F(CapiGraph, TheCpuIgnoresEveryValidGraphWalk) {
  Index graph = Built("Graph16");
  ASSERT_TRUE(graph);
  const qv_search_params_t defaults = Width(32);
  Results want;
  QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, &defaults, &want));
  int combinations = 0;
  for (qv_graph_visited_t visited : {QV_GRAPH_VISITED_DEFAULT, QV_GRAPH_VISITED_HASH_TABLE, QV_GRAPH_VISITED_BLOOM,
                                     QV_GRAPH_VISITED_CUCKOO})
    for (uint32_t probes : {0u, 1u, 2u, uint32_t(QV_GRAPH_MAX_PROBES)})
      for (uint32_t warps : {0u, 1u, 4u, uint32_t(QV_GRAPH_MAX_WARPS_PER_QUERY)})
        for (uint32_t queries : {0u, 1u, 2u, 4u}) {
          if (queries > 1 && warps > 1) continue;  // refused (CapiParamsGraphWalk)
          qv_search_params_t p = defaults;
          p.graph_visited = visited;
          p.graph_probes = probes;
          p.graph_warps_per_query = warps;
          p.graph_queries_per_warp = queries;
          Results got;
          QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, &p, &got));
          EXPECT_TRUE(got == want) << "visited " << visited << " probes " << probes << " warps_per_query " << warps
                                   << " queries_per_warp " << queries;
          ++combinations;
        }
  EXPECT_EQ(combinations, 4 * 4 * 12);
}

int64_t Count(const qv_index_t* index) {
  qv_index_info_t info;
  qv_index_info_init(&info);
  EXPECT_EQ(qv_index_info(index, &info), QV_OK);
  return info.count;
}

// qv_index_set_progress: the build reports from 0 to 1 as it goes; a cancel part way, or at the
// first report of an add after the build, leaves the index as it was; NULL removes the callback.
TEST_F(CapiGraph, ProgressFollowsTheBuildAndACancelChangesNothing) {
  Index index = MakeIndex(ctx_.get(), kDim, QV_METRIC_L2, "Graph16");
  ASSERT_TRUE(index);
  ProgressLog log;
  QV_ASSERT_OK(qv_index_set_progress(index.get(), RecordProgress, &log));
  QV_ASSERT_OK(qv_index_add(index.get(), kN, x_.data(), nullptr));
  ASSERT_GE(log.fractions.size(), 5u) << "the build's steps report";
  EXPECT_EQ(log.fractions.front(), 0.0);
  EXPECT_EQ(log.fractions.back(), 1.0);
  EXPECT_TRUE(std::is_sorted(log.fractions.begin(), log.fractions.end()));

  // Cancelled half way through a build (a new index), and at the start of an add to a built one.
  Index fresh = MakeIndex(ctx_.get(), kDim, QV_METRIC_L2, "Graph16");
  ASSERT_TRUE(fresh);
  ProgressLog stop;
  stop.stop_at = 0.5;
  QV_ASSERT_OK(qv_index_set_progress(fresh.get(), RecordProgress, &stop));
  EXPECT_EQ(qv_index_add(fresh.get(), kN, x_.data(), nullptr), QV_ERR_CANCELLED);
  EXPECT_NE(std::string(qv_last_error_message()).find("cancelled"), std::string::npos) << qv_last_error_message();
  EXPECT_GE(stop.fractions.back(), 0.5);
  EXPECT_EQ(Count(fresh.get()), 0);
  stop.stop_at = 0;
  stop.fractions.clear();
  QV_ASSERT_OK(qv_index_set_progress(index.get(), RecordProgress, &stop));
  EXPECT_EQ(qv_index_add(index.get(), 1, q_.data(), nullptr), QV_ERR_CANCELLED);
  EXPECT_EQ(stop.fractions, std::vector<double>{0.0});
  EXPECT_EQ(Count(index.get()), kN);

  // Without the callback the same calls go through, and the built index searches as one never
  // cancelled.
  QV_ASSERT_OK(qv_index_set_progress(fresh.get(), nullptr, nullptr));
  QV_ASSERT_OK(qv_index_add(fresh.get(), kN, x_.data(), nullptr));
  EXPECT_EQ(Count(fresh.get()), kN);
  std::vector<float> d1(size_t(kNq * kK)), d2(size_t(kNq * kK));
  std::vector<int64_t> i1(size_t(kNq * kK)), i2(size_t(kNq * kK));
  QV_ASSERT_OK(qv_index_search(index.get(), kNq, q_.data(), kK, nullptr, d1.data(), i1.data()));
  QV_ASSERT_OK(qv_index_search(fresh.get(), kNq, q_.data(), kK, nullptr, d2.data(), i2.data()));
  EXPECT_EQ(i1, i2);
  EXPECT_EQ(d1, d2);
  EXPECT_EQ(qv_index_set_progress(nullptr, RecordProgress, &log), QV_ERR_INVALID_ARGUMENT);
}

TEST_F(CapiGraph, BadInputLeavesTheIndexUnchanged) {
  Index graph = MakeIndex(ctx_.get(), kDim, QV_METRIC_L2, "Graph16");
  ASSERT_TRUE(graph);
  Results got;
  EXPECT_EQ(Search(graph.get(), q_, kDim, kK, nullptr, &got), QV_ERR_NOT_TRAINED);
  QV_EXPECT_OK(qv_index_train(graph.get(), kN, x_.data()));  // nothing to train: accepted
  QV_ASSERT_OK(qv_index_add(graph.get(), kN, x_.data(), nullptr));
  Results before;
  QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, nullptr, &before));
  std::vector<float> nan(x_.begin(), x_.begin() + 5 * kDim);
  nan[2 * kDim + 1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(qv_index_add(graph.get(), 5, nan.data(), nullptr), QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qv_index_add(graph.get(), 5, nullptr, nullptr), QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Search(graph.get(), q_, kDim, 0, nullptr, &got), QV_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Count(graph.get()), kN);
  Results after;
  QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, nullptr, &after));
  EXPECT_TRUE(after == before);
  // k above the count pads with -1.
  Index small = MakeIndex(ctx_.get(), kDim, QV_METRIC_L2, "Graph16");
  QV_ASSERT_OK(qv_index_add(small.get(), 3, x_.data(), nullptr));
  QV_ASSERT_OK(Search(small.get(), q_, kDim, 5, nullptr, &got));
  for (int64_t i = 0; i < kNq; ++i) {
    EXPECT_EQ(got.ids[i * 5 + 3], -1);
    EXPECT_EQ(got.ids[i * 5 + 4], -1);
  }
}

}  // namespace
