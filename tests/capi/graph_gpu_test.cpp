// The graph index ("Graph<R>") on a CUDA context through the C API's graph_* search parameters:
// every visited set, multi-step probing, crews and several queries a warp reach about the recall of
// the defaults; what the device refuses comes back as QV_ERR_INVALID_ARGUMENT with the index as it
// was. Skipped without a CUDA device.
#include <string>
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

constexpr int64_t kDim = 32, kN = 20000, kNq = 300;
constexpr uint32_t kK = 10;
constexpr uint32_t kWidth = 32;  // recall@10 about 0.997 on the CPU: room to see a loss
// Recall@10 a tuned walk may lose against the defaults (filters' false positives, other probing);
// more for the hashed walk, whose Hamming distances tie often.
constexpr double kRecallSlack = 0.02, kHashedRecallSlack = 0.05;

Context MakeTestCudaContext() {
  int32_t count = 0;
  if (qv_cuda_device_count(&count) != QV_OK || count == 0) return Context();
  return MakeCudaContext(TestCudaDevice(count));
}

struct Walk {
  const char* name;
  qv_graph_visited_t visited;
  uint32_t probes, warps_per_query, queries_per_warp;
};
const Walk kWalks[] = {
    {"hash table", QV_GRAPH_VISITED_HASH_TABLE, 0, 0, 0},
    {"bloom", QV_GRAPH_VISITED_BLOOM, 0, 0, 0},
    {"cuckoo", QV_GRAPH_VISITED_CUCKOO, 0, 0, 0},
    {"probes 2", QV_GRAPH_VISITED_DEFAULT, 2, 0, 0},
    {"warps_per_query 4", QV_GRAPH_VISITED_DEFAULT, 0, 4, 0},
    {"queries_per_warp 2", QV_GRAPH_VISITED_DEFAULT, 0, 0, 2},
    {"all at once", QV_GRAPH_VISITED_CUCKOO, 2, 1, 4},
};

qv_search_params_t Params(const Walk& walk) {
  qv_search_params_t p;
  qv_search_params_init(&p);
  p.search_width = kWidth;
  p.graph_visited = walk.visited;
  p.graph_probes = walk.probes;
  p.graph_warps_per_query = walk.warps_per_query;
  p.graph_queries_per_warp = walk.queries_per_warp;
  return p;
}

class CapiGraphGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    gpu_ = MakeTestCudaContext();
    if (!gpu_) GTEST_SKIP() << "no CUDA device";
    x_ = ClusteredVectors(kN, kDim, 30, 5, 61);
    q_ = ClusteredVectors(kNq, kDim, 30, 5, 62);
    Index flat = MakeIndex(gpu_.get(), kDim, QV_METRIC_L2, "Flat");
    ASSERT_TRUE(flat) << qv_last_error_message();
    QV_ASSERT_OK(qv_index_add(flat.get(), kN, x_.data(), nullptr));
    QV_ASSERT_OK(Search(flat.get(), q_, kDim, kK, nullptr, &exact_));
  }
  Index Built(const char* descriptor, int64_t n) {
    Index index = MakeIndex(gpu_.get(), kDim, QV_METRIC_L2, descriptor);
    EXPECT_TRUE(index) << descriptor << ": " << qv_last_error_message();
    if (index) EXPECT_EQ(qv_index_add(index.get(), n, x_.data(), nullptr), QV_OK) << qv_last_error_message();
    return index;
  }
  Context gpu_;
  std::vector<float> x_, q_;
  Results exact_;
};

TEST_F(CapiGraphGpu, EveryWalkReachesTheRecallOfTheDefaults) {
  // The hashed walk ("H256": Hamming distances, then an exact re-rank) takes the same parameters.
  for (const char* descriptor : {"Graph32", "Graph32,H256"}) {
    Index graph = Built(descriptor, kN);
    ASSERT_TRUE(graph);
    qv_index_info_t info;
    qv_index_info_init(&info);
    QV_ASSERT_OK(qv_index_info(graph.get(), &info));
    ASSERT_EQ(info.device, QV_DEVICE_CUDA);
    const qv_search_params_t defaults = Params({"defaults", QV_GRAPH_VISITED_DEFAULT, 0, 0, 0});
    Results base;
    QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, &defaults, &base));
    const double base_recall = IdOverlap(base, exact_, kNq, kK);
    const bool hashed = std::string(descriptor) != "Graph32";
    if (!hashed) EXPECT_GE(base_recall, 0.95);
    const double slack = hashed ? kHashedRecallSlack : kRecallSlack;
    for (const Walk& walk : kWalks) {
      const qv_search_params_t p = Params(walk);
      Results got;
      ASSERT_EQ(Search(graph.get(), q_, kDim, kK, &p, &got), QV_OK)
          << descriptor << ", " << walk.name << ": " << qv_last_error_message();
      EXPECT_GE(IdOverlap(got, exact_, kNq, kK), base_recall - slack)
          << descriptor << ", " << walk.name << " (defaults: " << base_recall << ")";
      for (int64_t id : got.ids) ASSERT_GE(id, 0) << descriptor << ", " << walk.name;
    }
    // A batch of one query, where the automatic choice gives it a crew of warps.
    const std::vector<float> one(q_.begin(), q_.begin() + kDim);
    Results alone, crew;
    QV_ASSERT_OK(Search(graph.get(), one, kDim, kK, &defaults, &alone));
    const qv_search_params_t one_warp = Params({"one warp", QV_GRAPH_VISITED_DEFAULT, 0, 1, 0});
    QV_ASSERT_OK(Search(graph.get(), one, kDim, kK, &one_warp, &crew));
    EXPECT_EQ(IdOverlap(alone, crew, 1, kK), 1.0) << descriptor;
  }
}

TEST_F(CapiGraphGpu, WhatTheDeviceRefusesIsAnInvalidArgument) {
  Index graph = Built("Graph64", 3000);
  ASSERT_TRUE(graph);
  Results before;
  QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, nullptr, &before));
  // Several queries a warp and a crew of warps a query: refused before the device is asked.
  qv_search_params_t p = Params({"crew of multi-query warps", QV_GRAPH_VISITED_DEFAULT, 0, 2, 2});
  Results r;
  for (const char* field : {"graph_warps_per_query", "graph_queries_per_warp"})
    EXPECT_TRUE(FailsNaming(Search(graph.get(), q_, kDim, kK, &p, &r), QV_ERR_INVALID_ARGUMENT, field));
  // 5 probes x degree 64 = 320 candidates an iteration, more than the device's walk holds (256):
  // the backend's refusal, with its message.
  p = Params({"probes 5", QV_GRAPH_VISITED_DEFAULT, 5, 0, 0});
  EXPECT_EQ(Search(graph.get(), q_, kDim, kK, &p, &r), QV_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qv_last_error_message()).find("probes"), std::string::npos) << qv_last_error_message();
  // 4 probes x 64 = 256 fits.
  p = Params({"probes 4", QV_GRAPH_VISITED_DEFAULT, 4, 0, 0});
  QV_EXPECT_OK(Search(graph.get(), q_, kDim, kK, &p, &r));
  EXPECT_EQ(Count(graph.get()), 3000);
  Results after;
  QV_ASSERT_OK(Search(graph.get(), q_, kDim, kK, nullptr, &after));
  EXPECT_TRUE(after == before);
}

}  // namespace
