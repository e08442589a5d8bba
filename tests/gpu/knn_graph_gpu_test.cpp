// qv_knn_graph on a CUDA context: the approximate method runs on the device (an inverted file of
// the points, each searched in its nearest lists); its recall against the exact graph reaches the
// target for every metric, its estimate is close, every list holds k distinct other points, and the
// progress it reports rises to 1.
#include <algorithm>
#include <set>
#include <vector>

#include "gpu_testing.h"
#include "quiver/quiver.h"
#include "sanitizer_sizes.h"

namespace quiver::testing {
namespace {

qv_context_t* cuda_context() {
  qv_context_options_t o;
  qv_context_options_init(&o);
  o.device = QV_DEVICE_CUDA;
  o.device_id = test_device();
  o.cpu_threads = 2;
  qv_context_t* ctx = nullptr;
  EXPECT_EQ(qv_context_create(&o, &ctx), QV_OK) << qv_last_error_message();
  return ctx;
}

int RecordProgress(double fraction, void* user) {
  static_cast<std::vector<double>*>(user)->push_back(fraction);
  return 0;
}

TEST(GpuKnnGraph, ApproximateOnTheDeviceReachesItsTarget) {
  QV_REQUIRE_GPU();
  qv_context_t* ctx = cuda_context();
  const int64_t n = sized(20011, 3001), dim = 24;
  const uint32_t k = 10;
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    std::vector<float> x = clustered_vectors(n, dim, 53, 7);
    if (metric == QV_METRIC_INNER_PRODUCT) normalize(x, dim);  // inner products rank as on a sphere
    qv_knn_graph_params_t p;
    qv_knn_graph_params_init(&p);
    p.method = QV_KNN_GRAPH_EXACT;
    std::vector<float> exact_d(static_cast<size_t>(n * k));
    std::vector<int64_t> exact_i(static_cast<size_t>(n * k));
    ASSERT_EQ(qv_knn_graph(ctx, metric, dim, n, x.data(), k, &p, exact_d.data(), exact_i.data(), nullptr), QV_OK)
        << qv_last_error_message();
    for (double target : {0.9, 0.99}) {
      SCOPED_TRACE(::testing::Message() << "metric " << metric << " target " << target);
      p.method = QV_KNN_GRAPH_APPROXIMATE;
      p.target_recall = target;
      p.recall_sample = 500;
      std::vector<double> progress;
      p.progress = RecordProgress;
      p.user_data = &progress;
      std::vector<float> d(static_cast<size_t>(n * k));
      std::vector<int64_t> ids(static_cast<size_t>(n * k));
      double estimate = -2;
      ASSERT_EQ(qv_knn_graph(ctx, metric, dim, n, x.data(), k, &p, d.data(), ids.data(), &estimate), QV_OK)
          << qv_last_error_message();
      int64_t hits = 0;
      for (int64_t u = 0; u < n; ++u) {
        const std::set<int64_t> row(ids.begin() + u * k, ids.begin() + (u + 1) * k);
        EXPECT_EQ(row.size(), k) << "point " << u;
        EXPECT_EQ(row.count(u), 0u) << "point " << u;
        EXPECT_GE(*row.begin(), 0) << "point " << u;
        for (uint32_t j = 0; j < k; ++j) hits += row.count(exact_i[u * k + j]);
      }
      const double recall = double(hits) / double(n * k);
      EXPECT_GE(recall, target - 0.02);
      EXPECT_NEAR(estimate, recall, 0.04);
      ASSERT_FALSE(progress.empty());
      EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
      EXPECT_EQ(progress.back(), 1.0);
    }
  }
  qv_context_free(ctx);
}

}  // namespace
}  // namespace quiver::testing
