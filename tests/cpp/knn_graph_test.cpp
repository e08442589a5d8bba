// The k-NN graph (cpp/graph/knn_graph.h): exact and approximate methods against a double-precision
// brute force, on awkward sizes, ties, duplicates and separated clusters; progress and cancel.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/graph/knn_graph.h"
#include "reference.h"

namespace quiver {
namespace {

Context cpu_context(int threads = 2) {
  ContextOptions o;
  o.device = DeviceKind::cpu;
  o.cpu_threads = threads;
  return Context(o);
}

// Gaussian blobs: `clusters` centres spread over [-spread, spread], unit noise around each.
std::vector<float> blobs(int64_t n, int64_t dim, int64_t clusters, float spread, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> centre(-spread, spread);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> centres(static_cast<size_t>(clusters * dim));
  for (auto& c : centres) c = centre(gen);
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < dim; ++d) x[i * dim + d] = centres[(i % clusters) * dim + d] + noise(gen);
  return x;
}

// The reference graph in double: every point's k nearest others, ties to the smaller id.
struct Reference {
  std::vector<int64_t> ids;
  std::vector<double> distances;
};

Reference reference_graph(Metric metric, const std::vector<float>& x, int64_t n, int64_t dim, int64_t k) {
  std::vector<float> rows = x;
  if (metric == Metric::cosine)
    for (int64_t i = 0; i < n; ++i) {
      double norm = 0;
      for (int64_t d = 0; d < dim; ++d) norm += double(rows[i * dim + d]) * rows[i * dim + d];
      for (int64_t d = 0; d < dim; ++d) rows[i * dim + d] = float(rows[i * dim + d] / std::sqrt(norm));
    }
  Reference r;
  for (int64_t u = 0; u < n; ++u) {
    auto ranking = testing::reference_ranking(metric == Metric::l2, &rows[u * dim], rows.data(), n, dim);
    int64_t taken = 0;
    for (const auto& [d, v] : ranking) {
      if (v == u) continue;
      if (taken++ == k) break;
      r.ids.push_back(v);
      r.distances.push_back(d);
    }
  }
  return r;
}

struct Graph {
  std::vector<int32_t> ids;
  std::vector<float> distances;
  KnnGraphStats stats;
};

Graph build(Context& ctx, Metric metric, const std::vector<float>& x, int64_t n, int64_t dim,
            const KnnGraphOptions& options) {
  Graph g;
  g.ids.assign(static_cast<size_t>(n * options.k), -7);
  g.distances.assign(static_cast<size_t>(n * options.k), std::nanf(""));
  g.stats = knn_graph(ctx, metric, dim, n, x.data(), options, g.ids.data(), g.distances.data());
  return g;
}

// Every rank's distance matches the reference's, and the id there is one at that distance (the same
// id unless two distances are within float rounding of each other).
void expect_matches(const Graph& g, const Reference& ref, int64_t n, int64_t k, const char* what) {
  for (int64_t u = 0; u < n; ++u)
    for (int64_t j = 0; j < k; ++j) {
      const size_t at = static_cast<size_t>(u * k + j);
      ASSERT_NE(g.ids[at], u) << what << ": point " << u << " is its own neighbour";
      const double tol = 1e-4 * std::max(1.0, std::fabs(ref.distances[at]));
      ASSERT_NEAR(g.distances[at], ref.distances[at], tol) << what << ": point " << u << " rank " << j;
      if (j + 1 < k && std::fabs(ref.distances[at + 1] - ref.distances[at]) > tol &&
          (j == 0 || std::fabs(ref.distances[at] - ref.distances[at - 1]) > tol))
        ASSERT_EQ(g.ids[at], ref.ids[at]) << what << ": point " << u << " rank " << j;
    }
}

double recall(const Graph& g, const Reference& ref, int64_t n, int64_t k) {
  int64_t hits = 0;
  for (int64_t u = 0; u < n; ++u)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t v = g.ids[u * k + j];
      for (int64_t t = 0; t < k; ++t) hits += ref.ids[u * k + t] == v;
    }
  return double(hits) / double(n * k);
}

TEST(KnnGraph, ExactMatchesTheReferenceOnAwkwardSizes) {
  Context ctx = cpu_context();
  const int64_t dim = 7;
  for (int64_t n : {2, 3, 33, 100, 257}) {
    const auto x = testing::random_vectors(n, dim, uint32_t(n));
    for (Metric metric : {Metric::l2, Metric::inner_product, Metric::cosine})
      for (int64_t k : {int64_t{1}, std::min<int64_t>(5, n - 1), n - 1}) {
        KnnGraphOptions o;
        o.k = k;
        o.method = KnnGraphMethod::exact;
        const Graph g = build(ctx, metric, x, n, dim, o);
        EXPECT_EQ(g.stats.recall, 1);
        EXPECT_EQ(g.stats.method, KnnGraphMethod::exact);
        const std::string what = std::string(metric_name(metric)) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
        expect_matches(g, reference_graph(metric, x, n, dim, k), n, k, what.c_str());
      }
  }
}

TEST(KnnGraph, ApproximateIsExactOnSmallSets) {
  // Below one inverted list's worth of points every candidate is searched exactly.
  Context ctx = cpu_context();
  const int64_t n = 257, dim = 5;
  const auto x = testing::random_vectors(n, dim, 3);
  for (Metric metric : {Metric::l2, Metric::inner_product, Metric::cosine})
    for (int64_t k : {int64_t{1}, int64_t{20}, n - 1}) {
      KnnGraphOptions o;
      o.k = k;
      o.method = KnnGraphMethod::approximate;
      const Graph g = build(ctx, metric, x, n, dim, o);
      EXPECT_EQ(g.stats.method, KnnGraphMethod::approximate);
      expect_matches(g, reference_graph(metric, x, n, dim, k), n, k, metric_name(metric));
    }
}

TEST(KnnGraph, DuplicatesAndTiesGoToTheSmallerId) {
  // Integer points, many exact duplicates: distances are exact in float, so every tie is a true
  // tie and the order must be the reference's. A point's duplicates are its neighbours, never itself.
  Context ctx = cpu_context();
  const int64_t n = 150, dim = 3, k = 12;
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < dim; ++d) x[i * dim + d] = float((i * (d + 3)) % 5);
  const Reference ref = reference_graph(Metric::l2, x, n, dim, k);
  for (KnnGraphMethod method : {KnnGraphMethod::exact, KnnGraphMethod::approximate}) {
    KnnGraphOptions o;
    o.k = k;
    o.method = method;
    const Graph g = build(ctx, Metric::l2, x, n, dim, o);
    for (int64_t i = 0; i < n * k; ++i) {
      ASSERT_EQ(g.ids[i], ref.ids[i]) << "method " << int(method) << " entry " << i;
      ASSERT_EQ(g.distances[i], float(ref.distances[i]));
    }
  }
}

TEST(KnnGraph, SeparatedClustersKeepTheirNeighboursInside) {
  Context ctx = cpu_context();
  const int64_t clusters = 5, n = 5 * 301, dim = 8, k = 10;
  const auto x = blobs(n, dim, clusters, 1000.0f, 11);
  const Reference ref = reference_graph(Metric::l2, x, n, dim, k);
  for (KnnGraphMethod method : {KnnGraphMethod::exact, KnnGraphMethod::approximate}) {
    KnnGraphOptions o;
    o.k = k;
    o.method = method;
    o.recall_sample = 200;
    const Graph g = build(ctx, Metric::l2, x, n, dim, o);
    for (int64_t u = 0; u < n; ++u)
      for (int64_t j = 0; j < k; ++j) ASSERT_EQ(g.ids[u * k + j] % clusters, u % clusters);
    EXPECT_GE(recall(g, ref, n, k), 0.95) << "method " << int(method);
  }
}

TEST(KnnGraph, ApproximateReachesItsTargetOnClusteredData) {
  Context ctx = cpu_context();
  const int64_t n = 6000, dim = 16, k = 10;
  const auto x = blobs(n, dim, 20, 6.0f, 5);
  KnnGraphOptions exact;
  exact.k = k;
  exact.method = KnnGraphMethod::exact;
  const Graph truth = build(ctx, Metric::l2, x, n, dim, exact);
  const Reference ref{std::vector<int64_t>(truth.ids.begin(), truth.ids.end()), {}};
  for (double target : {0.9, 0.95}) {
    KnnGraphOptions o;
    o.k = k;
    o.method = KnnGraphMethod::approximate;
    o.target_recall = target;
    o.recall_sample = 1000;
    const Graph g = build(ctx, Metric::l2, x, n, dim, o);
    const double r = recall(g, ref, n, k);
    EXPECT_GE(r, target) << "target " << target;
    EXPECT_NEAR(g.stats.recall, r, 0.03) << "the estimate on 1000 points, target " << target;
  }
}

TEST(KnnGraph, ApproximateIsDeterministicWhateverTheThreads) {
  const int64_t n = 3000, dim = 12, k = 8;
  const auto x = blobs(n, dim, 7, 4.0f, 9);
  KnnGraphOptions o;
  o.k = k;
  o.method = KnnGraphMethod::approximate;
  o.target_recall = 0.9;  // probes only some of the inverted lists: NN-descent has work to do
  o.seed = 77;
  Context one = cpu_context(1);
  Context three = cpu_context(3);
  for (Metric metric : {Metric::l2, Metric::cosine}) {
    const Graph a = build(one, metric, x, n, dim, o);
    const Graph b = build(three, metric, x, n, dim, o);
    EXPECT_EQ(a.ids, b.ids) << metric_name(metric);
    EXPECT_EQ(a.distances, b.distances) << metric_name(metric);
    EXPECT_GE(a.stats.iterations, 1);
  }
}

TEST(KnnGraph, ProgressRisesToOneAndCancelStops) {
  Context ctx = cpu_context();
  const int64_t n = 3000, dim = 8, k = 5;
  const auto x = blobs(n, dim, 4, 3.0f, 2);
  for (KnnGraphMethod method : {KnnGraphMethod::exact, KnnGraphMethod::approximate}) {
    std::vector<double> seen;
    KnnGraphOptions o;
    o.k = k;
    o.method = method;
    o.target_recall = 0.9;
    o.recall_sample = 50;
    o.progress = [&](double f) {
      seen.push_back(f);
      return true;
    };
    build(ctx, Metric::l2, x, n, dim, o);
    ASSERT_FALSE(seen.empty());
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end())) << "method " << int(method);
    EXPECT_DOUBLE_EQ(seen.back(), 1.0);

    for (size_t stop_at : {size_t{0}, seen.size() / 2}) {
      size_t calls = 0;
      o.progress = [&](double) { return calls++ < stop_at; };
      try {
        build(ctx, Metric::l2, x, n, dim, o);
        FAIL() << "not cancelled, method " << int(method);
      } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::cancelled);
        EXPECT_EQ(calls, stop_at + 1) << "no call after the one that said stop";
      }
    }
  }
}

TEST(KnnGraph, AutomaticPicksExactForSmallSetsAndFullRecall) {
  Context ctx = cpu_context();
  EXPECT_EQ(resolve_knn_graph_method(ctx, KnnGraphMethod::automatic, 1000, 64), KnnGraphMethod::exact);
  EXPECT_EQ(resolve_knn_graph_method(ctx, KnnGraphMethod::automatic, 10000000, 64), KnnGraphMethod::approximate);
  EXPECT_EQ(resolve_knn_graph_method(ctx, KnnGraphMethod::approximate, 100, 2), KnnGraphMethod::approximate);
  const auto x = testing::random_vectors(50, 4, 1);
  KnnGraphOptions o;
  o.k = 3;
  o.target_recall = 1;
  EXPECT_EQ(build(ctx, Metric::l2, x, 50, 4, o).stats.method, KnnGraphMethod::exact);
}

TEST(KnnGraph, BadInputNamesTheArgument) {
  Context ctx = cpu_context();
  const int64_t n = 10, dim = 3;
  auto x = testing::random_vectors(n, dim, 4);
  std::vector<int32_t> ids(n * n);
  const auto expect_invalid = [&](const std::vector<float>& data, int64_t rows, KnnGraphOptions o, Metric metric,
                                  const char* needle) {
    try {
      knn_graph(ctx, metric, dim, rows, data.data(), o, ids.data(), nullptr);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument) << needle;
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  KnnGraphOptions o;
  o.k = 0;
  expect_invalid(x, n, o, Metric::l2, "k = 0");
  o.k = n;
  expect_invalid(x, n, o, Metric::l2, "k = 10");
  o.k = 1;
  expect_invalid(x, 1, o, Metric::l2, "n = 1");
  o.target_recall = 0;
  expect_invalid(x, n, o, Metric::l2, "target_recall");
  o.target_recall = 0.9;
  o.method = static_cast<KnnGraphMethod>(9);
  expect_invalid(x, n, o, Metric::l2, "method");
  o.method = KnnGraphMethod::approximate;
  o.recall_sample = -1;
  expect_invalid(x, n, o, Metric::l2, "recall_sample");
  o.recall_sample = 0;
  for (KnnGraphMethod method : {KnnGraphMethod::exact, KnnGraphMethod::approximate}) {
    o.method = method;
    auto bad = x;
    bad[5] = std::numeric_limits<float>::quiet_NaN();
    expect_invalid(bad, n, o, Metric::l2, "row 1");
    auto zero = x;
    std::fill(zero.begin() + 2 * dim, zero.begin() + 3 * dim, 0.0f);
    expect_invalid(zero, n, o, Metric::cosine, "row 2");
  }
}

}  // namespace
}  // namespace quiver
