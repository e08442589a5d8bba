// qv_knn_graph: exact graphs against the float64 reference, the approximate method's recall and its
// estimate, progress and cancel through the C callback, versioned params, bad input.
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

struct Graph {
  std::vector<float> distances;
  std::vector<int64_t> ids;
  double recall = -2;
};

qv_status_t BuildGraph(qv_context_t* ctx, qv_metric_t metric, const std::vector<float>& x, int64_t dim,
                       uint32_t k, const qv_knn_graph_params_t* params, Graph* g) {
  const int64_t n = static_cast<int64_t>(x.size()) / dim;
  g->distances.assign(static_cast<size_t>(n * k), std::nanf(""));
  g->ids.assign(static_cast<size_t>(n * k), -7);
  return qv_knn_graph(ctx, metric, dim, n, x.data(), k, params, g->distances.data(), g->ids.data(), &g->recall);
}

TEST(CapiKnnGraph, ParamsInitGivesTheDocumentedDefaults) {
  qv_knn_graph_params_t p;
  std::memset(&p, 0xab, sizeof p);
  QV_ASSERT_OK(qv_knn_graph_params_init(&p));
  EXPECT_EQ(p.struct_size, sizeof p);
  EXPECT_EQ(p.method, QV_KNN_GRAPH_AUTO);
  EXPECT_EQ(p.target_recall, 0.95);
  EXPECT_EQ(p.seed, 1234u);
  EXPECT_EQ(p.recall_sample, 0);
  EXPECT_EQ(p.progress, nullptr);
  EXPECT_EQ(p.user_data, nullptr);
  EXPECT_TRUE(FailsNaming(qv_knn_graph_params_init(nullptr), QV_ERR_INVALID_ARGUMENT, "params"));
}

TEST(CapiKnnGraph, ExactMatchesTheReference) {
  Context ctx = MakeCpuContext();
  ASSERT_TRUE(ctx);
  const int64_t n = 97, dim = 6;
  const std::vector<float> x = RandomVectors(n, dim, 5);
  qv_knn_graph_params_t p;
  QV_ASSERT_OK(qv_knn_graph_params_init(&p));
  p.method = QV_KNN_GRAPH_EXACT;
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE})
    for (uint32_t k : {1u, 7u, 96u}) {
      Graph g;
      QV_ASSERT_OK(BuildGraph(ctx.get(), metric, x, dim, k, &p, &g));
      EXPECT_EQ(g.recall, 1.0);
      for (int64_t u = 0; u < n; ++u) {
        std::vector<Hit> ranked = RankAll(metric, &x[u * dim], x, Iota(n), dim);
        ranked.erase(std::remove_if(ranked.begin(), ranked.end(), [u](const Hit& h) { return h.id == u; }),
                     ranked.end());
        for (uint32_t j = 0; j < k; ++j) {
          const double want = ranked[j].distance;
          ASSERT_NEAR(g.distances[u * k + j], want, 1e-4 * std::max(1.0, std::fabs(want)))
              << MetricName(metric) << " k=" << k << " point " << u << " rank " << j;
          ASSERT_NE(g.ids[u * k + j], u);
        }
      }
    }
}

TEST(CapiKnnGraph, ApproximateReachesItsTargetAndEstimatesIt) {
  Context ctx = MakeCpuContext();
  ASSERT_TRUE(ctx);
  const int64_t n = 5000, dim = 16;
  const uint32_t k = 10;
  const std::vector<float> x = ClusteredVectors(n, dim, 30, 1, 2);
  qv_knn_graph_params_t p;
  QV_ASSERT_OK(qv_knn_graph_params_init(&p));
  p.method = QV_KNN_GRAPH_EXACT;
  Graph exact;
  QV_ASSERT_OK(BuildGraph(ctx.get(), QV_METRIC_L2, x, dim, k, &p, &exact));
  p.method = QV_KNN_GRAPH_APPROXIMATE;
  p.target_recall = 0.9;
  p.recall_sample = 500;
  Graph g;
  QV_ASSERT_OK(BuildGraph(ctx.get(), QV_METRIC_L2, x, dim, k, &p, &g));
  int64_t hits = 0;
  for (int64_t u = 0; u < n; ++u)
    for (uint32_t j = 0; j < k; ++j)
      for (uint32_t t = 0; t < k; ++t) hits += g.ids[u * k + j] == exact.ids[u * k + t];
  const double recall = double(hits) / double(n * k);
  EXPECT_GE(recall, 0.9);
  EXPECT_NEAR(g.recall, recall, 0.04);
  // No sample: no estimate. Distances and recall may be NULL.
  p.recall_sample = 0;
  QV_ASSERT_OK(BuildGraph(ctx.get(), QV_METRIC_L2, x, dim, k, &p, &g));
  EXPECT_EQ(g.recall, -1.0);
  QV_ASSERT_OK(qv_knn_graph(ctx.get(), QV_METRIC_L2, dim, n, x.data(), k, &p, nullptr, g.ids.data(), nullptr));
}

TEST(CapiKnnGraph, ProgressReachesOneAndNonzeroCancels) {
  Context ctx = MakeCpuContext();
  ASSERT_TRUE(ctx);
  const int64_t n = 3000, dim = 8;
  const std::vector<float> x = ClusteredVectors(n, dim, 10, 3, 4);
  for (qv_knn_graph_method_t method : {QV_KNN_GRAPH_EXACT, QV_KNN_GRAPH_APPROXIMATE}) {
    ProgressLog log;
    qv_knn_graph_params_t p;
    QV_ASSERT_OK(qv_knn_graph_params_init(&p));
    p.method = method;
    p.target_recall = 0.9;
    p.progress = RecordProgress;
    p.user_data = &log;
    Graph g;
    QV_ASSERT_OK(BuildGraph(ctx.get(), QV_METRIC_L2, x, dim, 5, &p, &g));
    ASSERT_FALSE(log.fractions.empty());
    EXPECT_TRUE(std::is_sorted(log.fractions.begin(), log.fractions.end()));
    EXPECT_EQ(log.fractions.back(), 1.0);

    ProgressLog stop;
    stop.stop_after = 1;
    p.user_data = &stop;
    EXPECT_EQ(BuildGraph(ctx.get(), QV_METRIC_L2, x, dim, 5, &p, &g), QV_ERR_CANCELLED);
    EXPECT_TRUE(ContainsToken(qv_last_error_message(), "cancelled")) << qv_last_error_message();
    EXPECT_EQ(stop.fractions.size(), 2u) << "no call after the one that said stop";
    // The context is fine afterwards.
    p.progress = nullptr;
    QV_ASSERT_OK(BuildGraph(ctx.get(), QV_METRIC_L2, x, dim, 5, &p, &g));
  }
}

TEST(CapiKnnGraph, OlderParamsStructsKeepTheirDefaults) {
  Context ctx = MakeCpuContext();
  ASSERT_TRUE(ctx);
  const int64_t dim = 4;
  const std::vector<float> x = RandomVectors(40, dim, 8);
  qv_knn_graph_params_t p;
  QV_ASSERT_OK(qv_knn_graph_params_init(&p));
  p.struct_size = offsetof(qv_knn_graph_params_t, recall_sample);  // up to seed
  p.recall_sample = -5;  // beyond the caller's struct: not read
  Graph g;
  QV_ASSERT_OK(BuildGraph(ctx.get(), QV_METRIC_L2, x, dim, 3, &p, &g));
  p.struct_size = 3;
  EXPECT_TRUE(FailsNaming(BuildGraph(ctx.get(), QV_METRIC_L2, x, dim, 3, &p, &g), QV_ERR_INVALID_ARGUMENT,
                          "struct_size"));
}

TEST(CapiKnnGraph, BadInputNamesTheArgument) {
  Context ctx = MakeCpuContext();
  ASSERT_TRUE(ctx);
  const int64_t n = 20, dim = 3;
  std::vector<float> x = RandomVectors(n, dim, 9);
  std::vector<int64_t> ids(n * n);
  std::vector<float> d(n * n);
  qv_context_t* c = ctx.get();
  const float* px = x.data();
  EXPECT_TRUE(FailsNaming(qv_knn_graph(nullptr, QV_METRIC_L2, dim, n, px, 2, nullptr, nullptr, ids.data(), nullptr),
                          QV_ERR_INVALID_ARGUMENT, "context"));
  EXPECT_TRUE(FailsNaming(qv_knn_graph(c, QV_METRIC_L2, dim, 1, px, 1, nullptr, nullptr, ids.data(), nullptr),
                          QV_ERR_INVALID_ARGUMENT, "n"));
  EXPECT_TRUE(FailsNaming(qv_knn_graph(c, QV_METRIC_L2, dim, n, px, 0, nullptr, nullptr, ids.data(), nullptr),
                          QV_ERR_INVALID_ARGUMENT, "k"));
  EXPECT_TRUE(FailsNaming(qv_knn_graph(c, QV_METRIC_L2, dim, n, px, n, nullptr, nullptr, ids.data(), nullptr),
                          QV_ERR_INVALID_ARGUMENT, "k"));
  EXPECT_TRUE(FailsNaming(qv_knn_graph(c, QV_METRIC_L2, dim, n, nullptr, 2, nullptr, nullptr, ids.data(), nullptr),
                          QV_ERR_INVALID_ARGUMENT, "x"));
  EXPECT_TRUE(FailsNaming(qv_knn_graph(c, QV_METRIC_L2, dim, n, px, 2, nullptr, d.data(), nullptr, nullptr),
                          QV_ERR_INVALID_ARGUMENT, "ids"));
  EXPECT_TRUE(FailsNaming(qv_knn_graph(c, 7, dim, n, px, 2, nullptr, nullptr, ids.data(), nullptr),
                          QV_ERR_INVALID_ARGUMENT, "metric"));
  EXPECT_TRUE(FailsNaming(qv_knn_graph(c, QV_METRIC_L2, 0, n, px, 2, nullptr, nullptr, ids.data(), nullptr),
                          QV_ERR_INVALID_ARGUMENT, "dim"));
  for (qv_knn_graph_method_t method : {QV_KNN_GRAPH_EXACT, QV_KNN_GRAPH_APPROXIMATE}) {
    qv_knn_graph_params_t p;
    QV_ASSERT_OK(qv_knn_graph_params_init(&p));
    p.method = method;
    std::vector<float> bad = x;
    bad[4 * dim + 1] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(FailsNaming(qv_knn_graph(c, QV_METRIC_L2, dim, n, bad.data(), 2, &p, nullptr, ids.data(), nullptr),
                            QV_ERR_INVALID_ARGUMENT, "x"));
    EXPECT_TRUE(ContainsToken(qv_last_error_message(), "4")) << qv_last_error_message();
  }
  qv_knn_graph_params_t p;
  QV_ASSERT_OK(qv_knn_graph_params_init(&p));
  p.method = 3;
  EXPECT_TRUE(FailsNaming(qv_knn_graph(c, QV_METRIC_L2, dim, n, px, 2, &p, nullptr, ids.data(), nullptr),
                          QV_ERR_INVALID_ARGUMENT, "params->method"));
  QV_ASSERT_OK(qv_knn_graph_params_init(&p));
  for (double r : {0.0, -0.5, 1.5, std::nan("")}) {
    p.target_recall = r;
    EXPECT_TRUE(FailsNaming(qv_knn_graph(c, QV_METRIC_L2, dim, n, px, 2, &p, nullptr, ids.data(), nullptr),
                            QV_ERR_INVALID_ARGUMENT, "params->target_recall"));
  }
  QV_ASSERT_OK(qv_knn_graph_params_init(&p));
  p.recall_sample = -1;
  EXPECT_TRUE(FailsNaming(qv_knn_graph(c, QV_METRIC_L2, dim, n, px, 2, &p, nullptr, ids.data(), nullptr),
                          QV_ERR_INVALID_ARGUMENT, "params->recall_sample"));
}

}  // namespace
