// IVFADC look-up tables against float64 references, and the three-term decomposition against the
// direct distance to the reconstructed vector (also through a scan kernel).
#include <gtest/gtest.h>

#include <cmath>

#include "cpp/core/thread_pool.h"
#include "cpp/quantize/pq_scan.h"
#include "cpp/quantize/pq_table_kernels.h"
#include "cpp/quantize/pq_tables.h"
#include "cpp/quantize/product_quantizer.h"
#include "quantizer_testing.h"
#include "reference.h"

namespace quiver {
namespace {

using testing::random_pq;

const float* codeword(const ProductQuantizer& pq, int64_t s, int64_t j) {
  return &pq.codebooks[(s * kPqCentroids + j) * pq.dsub()];
}

// (dim, m) shapes covering the specialised sub-dimensions (1, 2, 4, 8, 16) and the generic ones.
const std::pair<int64_t, int64_t> kShapes[] = {{7, 7}, {14, 7}, {12, 3}, {40, 5}, {48, 3}, {30, 2}, {33, 1}, {72, 3}};

TEST(PqTables, MatchFloat64References) {
  ThreadPool pool(2);
  for (auto [dim, m] : kShapes) {
    const ProductQuantizer pq = random_pq(dim, m, static_cast<uint32_t>(dim * 10 + m));
    const int64_t dsub = pq.dsub(), nlist = 5, nq = 70;
    auto centroids = testing::random_vectors(nlist, dim, 1, 2.0f);
    auto queries = testing::random_vectors(nq, dim, 2, 2.0f);
    const double tolerance = 1e-5 * (1 + dsub);

    std::vector<float> list_tables(nlist * m * kPqCentroids), one(m * kPqCentroids);
    pq_list_tables(pq, pool, nlist, centroids.data(), list_tables.data());
    for (int64_t c = 0; c < nlist; ++c) {
      pq_list_table(pq, &centroids[c * dim], one.data());
      for (int64_t s = 0; s < m; ++s)
        for (int64_t j = 0; j < kPqCentroids; ++j) {
          const float* q = codeword(pq, s, j);
          const double expected = testing::reference_distance(false, q, q, dsub) +
                                  2 * testing::reference_distance(false, &centroids[c * dim + s * dsub], q, dsub);
          EXPECT_NEAR(one[s * kPqCentroids + j], expected, tolerance) << dim << "/" << m;
          EXPECT_NEAR(list_tables[(c * m + s) * kPqCentroids + j], expected, tolerance) << dim << "/" << m;
        }
    }

    std::vector<float> batched(nq * m * kPqCentroids);
    pq_queries_inner_products(pq, pool, nq, queries.data(), batched.data());
    for (int64_t i = 0; i < nq; ++i) {
      const float* x = &queries[i * dim];
      std::vector<float> ip(m * kPqCentroids), l2(m * kPqCentroids);
      pq_query_inner_products(pq, x, ip.data());
      pq_query_l2_table(pq, x, l2.data());
      for (int64_t s = 0; s < m; ++s)
        for (int64_t j = 0; j < kPqCentroids; ++j) {
          const float* q = codeword(pq, s, j);
          const double expected_ip = testing::reference_distance(false, x + s * dsub, q, dsub);
          const double expected_l2 = testing::reference_distance(true, x + s * dsub, q, dsub);
          EXPECT_NEAR(ip[s * kPqCentroids + j], expected_ip, tolerance);
          EXPECT_NEAR(batched[(i * m + s) * kPqCentroids + j], expected_ip, tolerance);
          EXPECT_NEAR(l2[s * kPqCentroids + j], expected_l2, tolerance * 4);
        }
    }
  }
}

TEST(PqTables, EveryKernelSetMatchesFloat64) {
  std::vector<PqTableKernels> sets{pq_table_kernels_portable()};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) sets.push_back(pq_table_kernels_avx2());
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    sets.push_back(pq_table_kernels_avx512());
  for (int64_t dsub : {1, 2, 3, 4, 8, 13, 16, 24}) {
    const auto codebook = testing::random_vectors(kPqCentroids, dsub, static_cast<uint32_t>(dsub), 2.0f);
    const auto x = testing::random_vectors(1, dsub, static_cast<uint32_t>(dsub + 50), 2.0f);
    for (const PqTableKernels& k : sets) {
      std::vector<float> ip(kPqCentroids), l2(kPqCentroids);
      k.inner_products(codebook.data(), dsub, x.data(), ip.data());
      k.distances(codebook.data(), dsub, x.data(), l2.data());
      for (int64_t j = 0; j < kPqCentroids; ++j) {
        const float* c = &codebook[j * dsub];
        EXPECT_NEAR(ip[j], testing::reference_distance(false, c, x.data(), dsub), 1e-5 * (1 + dsub)) << dsub;
        EXPECT_NEAR(l2[j], testing::reference_distance(true, c, x.data(), dsub), 1e-5 * (1 + 4 * dsub)) << dsub;
      }
    }
  }
}

TEST(PqTables, ThreeTermSumEqualsDirectDistance) {
  ThreadPool pool(2);
  for (auto [dim, m] : kShapes) {
    const ProductQuantizer pq = random_pq(dim, m, static_cast<uint32_t>(dim + m));
    const int64_t n = 45, nlist = 3;
    auto centroids = testing::random_vectors(nlist, dim, 3, 4.0f);
    auto x = testing::random_vectors(1, dim, 4, 4.0f);
    std::vector<uint8_t> codes(n * m);
    for (int64_t i = 0; i < n * m; ++i) codes[i] = static_cast<uint8_t>((i * 97 + 13) % 256);
    std::vector<float> decoded(n * dim);
    pq_decode(pq, n, codes.data(), decoded.data());

    std::vector<float> term1(nlist * m * kPqCentroids), ip(m * kPqCentroids), table(m * kPqCentroids);
    pq_list_tables(pq, pool, nlist, centroids.data(), term1.data());
    pq_query_inner_products(pq, x.data(), ip.data());
    for (int64_t c = 0; c < nlist; ++c) {
      const float* centroid = &centroids[c * dim];
      // L2: ||x - c||^2 + term 1 + term 3 (-2 <x, q>).
      pq_combine_tables(m * kPqCentroids, &term1[c * m * kPqCentroids], -2.0f, ip.data(), table.data());
      const float bias = static_cast<float>(testing::reference_distance(true, x.data(), centroid, dim));
      // Inner product: <x, c> + <x, q>, negated so that smaller is better for the scan.
      std::vector<float> ip_table(m * kPqCentroids);
      pq_combine_tables(m * kPqCentroids, nullptr, -1.0f, ip.data(), ip_table.data());
      const float ip_bias = -static_cast<float>(testing::reference_distance(false, x.data(), centroid, dim));
      // The direct residual table on the same codes.
      std::vector<float> residual(dim), direct(m * kPqCentroids);
      for (int64_t d = 0; d < dim; ++d) residual[d] = x[d] - centroid[d];
      pq_query_l2_table(pq, residual.data(), direct.data());

      struct Collect {
        ScanSink sink;
        std::vector<float> keys;
        static void accept(ScanSink* s, float key, int64_t) { reinterpret_cast<Collect*>(s)->keys.push_back(key); }
      };
      Collect l2{{INFINITY, &Collect::accept}, {}}, inner{{INFINITY, &Collect::accept}, {}},
          residual_keys{{INFINITY, &Collect::accept}, {}};
      const PqScanFn scan = best_pq_scan();
      scan(codes.data(), n, m, table.data(), bias, 0, &l2.sink);
      scan(codes.data(), n, m, ip_table.data(), ip_bias, 0, &inner.sink);
      scan(codes.data(), n, m, direct.data(), 0.0f, 0, &residual_keys.sink);
      ASSERT_EQ(l2.keys.size(), static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        std::vector<float> reconstructed(dim);
        for (int64_t d = 0; d < dim; ++d) reconstructed[d] = centroid[d] + decoded[i * dim + d];
        const double expected = testing::reference_distance(true, x.data(), reconstructed.data(), dim);
        const double expected_ip = testing::reference_distance(false, x.data(), reconstructed.data(), dim);
        const double scale = 1e-5 * (testing::reference_distance(true, x.data(), x.data(), dim) + expected + dim);
        EXPECT_NEAR(l2.keys[i], expected, scale) << dim << "/" << m << " list " << c << " entry " << i;
        EXPECT_NEAR(residual_keys.keys[i], expected, scale) << dim << "/" << m;
        EXPECT_NEAR(-inner.keys[i], expected_ip, scale) << dim << "/" << m;
      }
    }
  }
}

}  // namespace
}  // namespace quiver
