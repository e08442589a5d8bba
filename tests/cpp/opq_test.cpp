// OPQ: the rotation is orthogonal, lowers PQ's quantization error on correlated data, is
// deterministic; apply_rotation against a float64 product; bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/quantize/opq.h"
#include "cpp/quantize/product_quantizer.h"
#include "quantizer_testing.h"
#include "reference.h"

namespace quiver {
namespace {

using testing::cpu_context;

// n x dim points of a low-dimensional Gaussian (latent scales 4, 3.5, ..., 0.5) mixed into every
// dimension by a random matrix, plus a little noise: every PQ sub-space sees all latent directions.
std::vector<float> correlated_data(int64_t n, int64_t dim, int64_t latent, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> mix(dim * latent);
  for (auto& v : mix) v = normal(gen) / std::sqrt(static_cast<float>(latent));
  std::vector<float> x(n * dim);
  std::vector<float> z(latent);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < latent; ++k) z[k] = normal(gen) * (4.0f - 3.5f * k / latent);
    for (int64_t d = 0; d < dim; ++d) {
      float sum = 0.05f * normal(gen);
      for (int64_t k = 0; k < latent; ++k) sum += mix[d * latent + k] * z[k];
      x[i * dim + d] = sum;
    }
  }
  return x;
}

double orthogonality_error(const std::vector<float>& r, int64_t dim) {
  double worst = 0;
  for (int64_t i = 0; i < dim; ++i)
    for (int64_t j = 0; j < dim; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < dim; ++k) sum += double(r[i * dim + k]) * r[j * dim + k];
      worst = std::max(worst, std::fabs(sum - (i == j ? 1.0 : 0.0)));
    }
  return worst;
}

double pq_error(Context& context, int64_t dim, int64_t m, int64_t n, const float* x) {
  PqTrainingOptions options;
  options.iterations = 15;
  ProductQuantizer pq = train_product_quantizer(context, dim, m, n, x, 11, options);
  std::vector<uint8_t> codes(n * m);
  std::vector<float> back(n * dim);
  pq_encode(pq, context.pool(), n, x, codes.data());
  pq_decode(pq, n, codes.data(), back.data());
  double sum = 0;
  for (int64_t i = 0; i < n * dim; ++i) sum += (double(x[i]) - back[i]) * (double(x[i]) - back[i]);
  return sum / n;
}

TEST(Opq, OrthogonalAndLowersErrorOnCorrelatedData) {
  Context context = cpu_context();
  const int64_t n = 3000, dim = 24, m = 4;
  const auto x = correlated_data(n, dim, 8, 1);
  OpqOptions options;
  options.iterations = 8;
  options.initial_kmeans_iterations = 8;
  const std::vector<float> r = train_opq_rotation(context, dim, m, n, x.data(), 7, options);
  ASSERT_EQ(r.size(), static_cast<size_t>(dim * dim));
  EXPECT_LT(orthogonality_error(r, dim), 1e-5);

  std::vector<float> rotated(n * dim);
  apply_rotation(context.pool(), r.data(), dim, n, x.data(), rotated.data());
  const double plain = pq_error(context, dim, m, n, x.data());
  const double optimized = pq_error(context, dim, m, n, rotated.data());
  std::cout << "PQ error per vector: plain " << plain << ", after OPQ " << optimized << "\n";
  EXPECT_LT(optimized, 0.8 * plain);

  // Deterministic for a seed (and the random start works too).
  EXPECT_EQ(train_opq_rotation(context, dim, m, n, x.data(), 7, options), r);
  options.random_start = true;
  options.iterations = 2;
  const std::vector<float> from_random = train_opq_rotation(context, dim, m, n, x.data(), 7, options);
  EXPECT_LT(orthogonality_error(from_random, dim), 1e-5);
}

TEST(Opq, SampledTrainingAndDefaults) {
  Context context = cpu_context();
  const int64_t n = 700, dim = 12, m = 3;
  const auto x = correlated_data(n, dim, 4, 2);
  OpqOptions options;
  options.max_training_vectors = 300;
  options.iterations = 3;
  EXPECT_LT(orthogonality_error(train_opq_rotation(context, dim, m, n, x.data(), 1, options), dim), 1e-5);
  EXPECT_LT(orthogonality_error(train_opq_rotation(context, dim, m, n, x.data(), 1), dim), 1e-5);
}

TEST(Opq, ApplyRotationMatchesFloat64) {
  ThreadPool pool(2);
  const int64_t dim = 13, n = 301;
  const auto r = testing::random_vectors(dim, dim, 3);  // any matrix: the product is what is checked
  const auto x = testing::random_vectors(n, dim, 4);
  std::vector<float> out(n * dim);
  apply_rotation(pool, r.data(), dim, n, x.data(), out.data());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t a = 0; a < dim; ++a)
      EXPECT_NEAR(out[i * dim + a], testing::reference_distance(false, &r[a * dim], &x[i * dim], dim), 1e-5);
}

TEST(Opq, RejectsBadInput) {
  Context context = cpu_context();
  const auto x = testing::random_vectors(300, 12, 1);
  auto message = [&](int64_t dim, int64_t m, int64_t n) {
    return testing::invalid_argument_message([&] { train_opq_rotation(context, dim, m, n, x.data(), 1); });
  };
  EXPECT_NE(message(12, 5, 300).find("M = 5 does not divide dim = 12"), std::string::npos);
  EXPECT_NE(message(12, 4, 255).find("at least 256 vectors, got 255"), std::string::npos);
  OpqOptions options;
  options.lloyd_steps = 0;
  EXPECT_THROW(train_opq_rotation(context, 12, 4, 300, x.data(), 1, options), Error);
  // No iterations: the starting rotation, the identity.
  options.lloyd_steps = 1;
  options.iterations = 0;
  const std::vector<float> r = train_opq_rotation(context, 12, 4, 300, x.data(), 1, options);
  for (int64_t i = 0; i < 12; ++i)
    for (int64_t j = 0; j < 12; ++j) EXPECT_EQ(r[i * 12 + j], i == j ? 1.0f : 0.0f);
}

}  // namespace
}  // namespace quiver
