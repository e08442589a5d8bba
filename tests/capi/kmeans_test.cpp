// qv_kmeans: a better objective than a random assignment, consistent outputs (finite centroids,
// nearest-centroid assignments, the objective they imply), determinism across thread counts, edge
// k.
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

// n points around `blobs` well-separated centres.
std::vector<float> Blobs(int64_t n, int64_t dim, int64_t blobs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::vector<float> centres = RandomVectors(blobs, dim, seed + 1);
  for (float& c : centres) c *= 5.0f;
  std::vector<float> x(n * dim);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < dim; ++j) x[i * dim + j] = centres[(i % blobs) * dim + j] + noise(rng);
  return x;
}

double SqDist(const float* a, const float* b, int64_t dim) {
  double s = 0;
  for (int64_t j = 0; j < dim; ++j) {
    double d = double(a[j]) - b[j];
    s += d * d;
  }
  return s;
}

// Checks centroids are finite, assignments are in range and name a nearest centroid, and returns
// the objective they imply (sum of squared distances to the nearest centroid), or -1 on failure.
double CheckConsistent(const std::vector<float>& x, int64_t n, int64_t dim,
                       const std::vector<float>& centroids, uint32_t k,
                       const std::vector<int64_t>& assignments) {
  for (float c : centroids)
    if (!std::isfinite(c)) {
      ADD_FAILURE() << "non-finite centroid coordinate " << c;
      return -1;
    }
  double objective = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) scale = std::max(scale, RefNorm2(&x[i * dim], dim));
  for (int64_t i = 0; i < n; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (uint32_t c = 0; c < k; ++c)
      best = std::min(best, SqDist(&x[i * dim], &centroids[c * dim], dim));
    objective += best;
    int64_t a = assignments[i];
    if (a < 0 || a >= k) {
      ADD_FAILURE() << "assignment " << a << " of point " << i << " out of range";
      return -1;
    }
    double mine = SqDist(&x[i * dim], &centroids[a * dim], dim);
    if (mine > best + 1e-4 * (scale + best) + 1e-12) {
      ADD_FAILURE() << "point " << i << " assigned to centroid " << a << " at " << mine
                    << " but the nearest is at " << best;
      return -1;
    }
  }
  return objective;
}

class CapiKmeans : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext(2);
    ASSERT_TRUE(ctx_) << qv_last_error_message();
  }
  Context ctx_;
};

TEST_F(CapiKmeans, BeatsRandomAssignmentAndIsConsistent) {
  const int64_t dim = 8, n = 1200;
  const uint32_t k = 6;
  std::vector<float> x = Blobs(n, dim, k, 701);
  qv_kmeans_params_t p;
  QV_ASSERT_OK(qv_kmeans_params_init(&p));
  p.max_points_per_centroid = 0;  // all points, so the objective is over all of them
  std::vector<float> centroids(k * dim, std::nanf(""));
  std::vector<int64_t> assignments(n, -5);
  double objective = -1;
  QV_ASSERT_OK(qv_kmeans(ctx_.get(), dim, n, x.data(), k, &p, centroids.data(), assignments.data(),
                         &objective));

  double implied = CheckConsistent(x, n, dim, centroids, k, assignments);
  ASSERT_GE(implied, 0);
  EXPECT_NEAR(objective, implied, 1e-3 * implied + 1e-6) << "objective vs the returned centroids";

  // A random assignment, with each cluster's mean as its centroid.
  std::mt19937_64 rng(702);
  std::vector<double> sums(k * dim, 0.0);
  std::vector<int64_t> counts(k, 0), random_assign(n);
  for (int64_t i = 0; i < n; ++i) {
    random_assign[i] = static_cast<int64_t>(rng() % k);
    counts[random_assign[i]]++;
    for (int64_t j = 0; j < dim; ++j) sums[random_assign[i] * dim + j] += x[i * dim + j];
  }
  double random_objective = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = random_assign[i];
    for (int64_t j = 0; j < dim; ++j) {
      double d = x[i * dim + j] - sums[c * dim + j] / std::max<int64_t>(counts[c], 1);
      random_objective += d * d;
    }
  }
  EXPECT_LT(objective, random_objective);
  // Well-separated blobs: close to the noise floor (n * dim * 0.3^2), far below random.
  EXPECT_LT(objective, 0.25 * random_objective);
}

TEST_F(CapiKmeans, DeterministicWhateverTheThreadCount) {
  const int64_t dim = 10, n = 900;
  const uint32_t k = 7;
  std::vector<float> x = RandomVectors(n, dim, 711);
  qv_kmeans_params_t p;
  QV_ASSERT_OK(qv_kmeans_params_init(&p));
  p.seed = 4242;
  p.iterations = 10;
  p.max_points_per_centroid = 64;  // exercises sub-sampling too

  std::vector<float> c[2];
  std::vector<int64_t> a[2];
  double obj[2];
  for (int run = 0; run < 2; ++run) {
    Context ctx = MakeCpuContext(run == 0 ? 1 : 2);
    ASSERT_TRUE(ctx);
    c[run].assign(k * dim, 0.0f);
    a[run].assign(n, -1);
    QV_ASSERT_OK(
        qv_kmeans(ctx.get(), dim, n, x.data(), k, &p, c[run].data(), a[run].data(), &obj[run]));
  }
  EXPECT_EQ(c[0], c[1]);
  EXPECT_EQ(a[0], a[1]);
  EXPECT_EQ(obj[0], obj[1]);
  // And the same seed again on the same context.
  std::vector<float> c2(k * dim);
  QV_ASSERT_OK(qv_kmeans(ctx_.get(), dim, n, x.data(), k, &p, c2.data(), nullptr, nullptr));
  EXPECT_EQ(c2, c[0]);
  // The assignments are valid for all n points, even though training used a sample.
  EXPECT_GE(CheckConsistent(x, n, dim, c[0], k, a[0]), 0);
}

TEST_F(CapiKmeans, KEqualsN) {
  const int64_t dim = 3, n = 20;
  std::vector<float> x = RandomVectors(n, dim, 721);
  std::vector<float> centroids(n * dim);
  std::vector<int64_t> assignments(n);
  double objective = -1;
  QV_ASSERT_OK(qv_kmeans(ctx_.get(), dim, n, x.data(), static_cast<uint32_t>(n), nullptr,
                         centroids.data(), assignments.data(), &objective));
  EXPECT_GE(CheckConsistent(x, n, dim, centroids, static_cast<uint32_t>(n), assignments), 0);
  // Every point is its own centroid.
  EXPECT_NEAR(objective, 0.0, 1e-6);
  std::vector<int64_t> sorted = assignments;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, Iota(n));
}

TEST_F(CapiKmeans, KEqualsOne) {
  const int64_t dim = 5, n = 333;
  std::vector<float> x = RandomVectors(n, dim, 731);
  qv_kmeans_params_t p;
  QV_ASSERT_OK(qv_kmeans_params_init(&p));
  p.max_points_per_centroid = 0;
  std::vector<float> centroid(dim);
  std::vector<int64_t> assignments(n, -1);
  double objective = -1;
  QV_ASSERT_OK(qv_kmeans(ctx_.get(), dim, n, x.data(), 1, &p, centroid.data(), assignments.data(),
                         &objective));
  std::vector<double> mean(dim, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < dim; ++j) mean[j] += x[i * dim + j] / double(n);
  for (int64_t j = 0; j < dim; ++j) EXPECT_NEAR(centroid[j], mean[j], 1e-4) << j;
  double expected = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < dim; ++j)
      expected += (x[i * dim + j] - mean[j]) * (x[i * dim + j] - mean[j]);
  EXPECT_NEAR(objective, expected, 1e-4 * expected);
  for (int64_t a : assignments) EXPECT_EQ(a, 0);
}

TEST_F(CapiKmeans, DegenerateDataKeepsCentroidsFinite) {
  // 3 distinct points, 5 clusters: some clusters must end up empty or duplicated.
  const int64_t dim = 4, n = 60;
  const uint32_t k = 5;
  std::vector<float> uniq = RandomVectors(3, dim, 741);
  std::vector<float> x;
  for (int64_t i = 0; i < n; ++i)
    x.insert(x.end(), uniq.begin() + (i % 3) * dim, uniq.begin() + (i % 3 + 1) * dim);
  std::vector<float> centroids(k * dim);
  std::vector<int64_t> assignments(n);
  double objective = -1;
  QV_ASSERT_OK(qv_kmeans(ctx_.get(), dim, n, x.data(), k, nullptr, centroids.data(),
                         assignments.data(), &objective));
  EXPECT_GE(CheckConsistent(x, n, dim, centroids, k, assignments), 0);
  EXPECT_NEAR(objective, 0.0, 1e-4);
}

TEST_F(CapiKmeans, OptionalOutputs) {
  const int64_t dim = 4, n = 100;
  std::vector<float> x = RandomVectors(n, dim, 751);
  std::vector<float> c1(3 * dim), c2(3 * dim);
  double obj = -1;
  QV_ASSERT_OK(qv_kmeans(ctx_.get(), dim, n, x.data(), 3, nullptr, c1.data(), nullptr, nullptr));
  QV_ASSERT_OK(qv_kmeans(ctx_.get(), dim, n, x.data(), 3, nullptr, c2.data(), nullptr, &obj));
  EXPECT_EQ(c1, c2);
  EXPECT_GE(obj, 0.0);
}

// params->progress: one report an iteration, in order, the last 1; a nonzero answer stops the call
// (QV_ERR_CANCELLED); params of the size before the callback existed run without one.
TEST_F(CapiKmeans, ProgressAfterEachIterationAndCancel) {
  const int64_t dim = 6, n = 600;
  const std::vector<float> x = RandomVectors(n, dim, 771);
  std::vector<float> c(10 * dim);
  qv_kmeans_params_t p;
  QV_ASSERT_OK(qv_kmeans_params_init(&p));
  EXPECT_EQ(p.progress, nullptr);
  EXPECT_EQ(p.user_data, nullptr);
  p.iterations = 12;
  ProgressLog log;
  p.progress = RecordProgress;
  p.user_data = &log;
  QV_ASSERT_OK(qv_kmeans(ctx_.get(), dim, n, x.data(), 10, &p, c.data(), nullptr, nullptr));
  ASSERT_EQ(log.fractions.size(), 12u);
  EXPECT_TRUE(std::is_sorted(log.fractions.begin(), log.fractions.end()));
  EXPECT_EQ(log.fractions.back(), 1.0);

  ProgressLog stop;  // the first report at half way or beyond cancels
  stop.stop_at = 0.5;
  p.user_data = &stop;
  EXPECT_EQ(qv_kmeans(ctx_.get(), dim, n, x.data(), 10, &p, c.data(), nullptr, nullptr), QV_ERR_CANCELLED);
  EXPECT_NE(std::string(qv_last_error_message()).find("cancelled"), std::string::npos) << qv_last_error_message();
  EXPECT_EQ(stop.fractions.size(), 6u) << "stopped at iteration 6 of 12";

  qv_kmeans_params_t older = p;
  older.struct_size = static_cast<uint32_t>(offsetof(qv_kmeans_params_t, progress));
  stop.fractions.clear();
  QV_ASSERT_OK(qv_kmeans(ctx_.get(), dim, n, x.data(), 10, &older, c.data(), nullptr, nullptr));
  EXPECT_TRUE(stop.fractions.empty()) << "a struct without the field has no callback";
}

TEST_F(CapiKmeans, BadArguments) {
  const int64_t dim = 4, n = 50;
  std::vector<float> x = RandomVectors(n, dim, 761);
  std::vector<float> c(8 * dim);
  std::vector<int64_t> a(n);
  qv_context_t* ctx = ctx_.get();
  EXPECT_TRUE(
      FailsNaming(qv_kmeans(nullptr, dim, n, x.data(), 3, nullptr, c.data(), nullptr, nullptr),
                  QV_ERR_INVALID_ARGUMENT, "context"));
  EXPECT_TRUE(FailsNaming(qv_kmeans(ctx, 0, n, x.data(), 3, nullptr, c.data(), nullptr, nullptr),
                          QV_ERR_INVALID_ARGUMENT, "dim"));
  EXPECT_TRUE(FailsNaming(qv_kmeans(ctx, -2, n, x.data(), 3, nullptr, c.data(), nullptr, nullptr),
                          QV_ERR_INVALID_ARGUMENT, "dim"));
  EXPECT_TRUE(FailsNaming(qv_kmeans(ctx, dim, -1, x.data(), 3, nullptr, c.data(), nullptr, nullptr),
                          QV_ERR_INVALID_ARGUMENT, "n"));
  EXPECT_TRUE(FailsNaming(qv_kmeans(ctx, dim, n, nullptr, 3, nullptr, c.data(), nullptr, nullptr),
                          QV_ERR_INVALID_ARGUMENT, "x"));
  EXPECT_TRUE(FailsNaming(qv_kmeans(ctx, dim, n, x.data(), 0, nullptr, c.data(), nullptr, nullptr),
                          QV_ERR_INVALID_ARGUMENT, "k"));
  EXPECT_TRUE(
      FailsNamingAny(qv_kmeans(ctx, dim, 5, x.data(), 8, nullptr, c.data(), nullptr, nullptr),
                     QV_ERR_INVALID_ARGUMENT, {"k", "n"}));
  EXPECT_TRUE(
      FailsNamingAny(qv_kmeans(ctx, dim, 0, x.data(), 1, nullptr, c.data(), nullptr, nullptr),
                     QV_ERR_INVALID_ARGUMENT, {"k", "n"}));
  EXPECT_TRUE(FailsNaming(qv_kmeans(ctx, dim, n, x.data(), 3, nullptr, nullptr, a.data(), nullptr),
                          QV_ERR_INVALID_ARGUMENT, "centroids"));
  std::vector<float> bad = x;
  bad[17] = std::nanf("");
  EXPECT_TRUE(
      FailsNaming(qv_kmeans(ctx, dim, n, bad.data(), 3, nullptr, c.data(), nullptr, nullptr),
                  QV_ERR_INVALID_ARGUMENT, "x"));
  bad[17] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(
      FailsNaming(qv_kmeans(ctx, dim, n, bad.data(), 3, nullptr, c.data(), nullptr, nullptr),
                  QV_ERR_INVALID_ARGUMENT, "x"));
}

}  // namespace
