// gpu::knn's fast compute modes (TF32, FP16, BF16 with an exact float32 re-rank) against a float64
// brute force: every metric, k = 1 .. 2048, dimensions that are not multiples of 8 or 16, n below the
// candidate count, exact ties, filters, host / device / pinned pointers and a DeviceMatrix, recall on
// 20k x 96 uniform and clustered data, fp16's range check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <vector>

#include "cpp/core/error.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver {
namespace {

using testing::DeviceArray;

constexpr gpu::ComputeMode kFastModes[] = {gpu::ComputeMode::tf32, gpu::ComputeMode::fp16, gpu::ComputeMode::bf16};

const char* mode_name(gpu::ComputeMode m) {
  switch (m) {
    case gpu::ComputeMode::fp32: return "fp32";
    case gpu::ComputeMode::tf32: return "tf32";
    case gpu::ComputeMode::fp16: return "fp16";
    case gpu::ComputeMode::bf16: return "bf16";
  }
  return "?";
}

struct Problem {
  int64_t n, dim, nq;
  Metric metric;
  std::vector<float> base, queries;
};

Problem uniform_problem(int64_t n, int64_t dim, int64_t nq, Metric metric, uint32_t seed) {
  Problem p{n, dim, nq, metric, testing::uniform_vectors(n, dim, seed), testing::uniform_vectors(nq, dim, seed + 1)};
  if (metric == Metric::cosine) {
    testing::normalize(p.base, dim);
    testing::normalize(p.queries, dim);
  }
  return p;
}

// BENCHMARKS.md's synthetic recipe, smaller: 64 skewed clusters in a 24-d latent space, mapped to
// dim by one Gaussian matrix, plus 0.05 noise. Base and queries share centres and map.
Problem clustered_problem(int64_t n, int64_t dim, int64_t nq, Metric metric, uint32_t seed) {
  const int64_t m = std::min<int64_t>(dim, 24), centres = 64;
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> centre(size_t(centres * m)), a(size_t(dim * m));
  for (auto& v : centre) v = 2.f * normal(gen);
  for (auto& v : a) v = normal(gen) / std::sqrt(float(m));
  std::vector<double> weight(centres);
  for (int64_t j = 0; j < centres; ++j) weight[j] = 1.0 / std::sqrt(double(j + 1));
  std::discrete_distribution<int64_t> pick(weight.begin(), weight.end());
  auto draw = [&](int64_t rows) {
    std::vector<float> x(size_t(rows * dim));
    std::vector<float> z(static_cast<size_t>(m));
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t c = pick(gen);
      for (int64_t i = 0; i < m; ++i) z[i] = centre[c * m + i] + normal(gen);
      for (int64_t d = 0; d < dim; ++d) {
        float s = 0.05f * normal(gen);
        for (int64_t i = 0; i < m; ++i) s += a[d * m + i] * z[i];
        x[r * dim + d] = s;
      }
    }
    return x;
  };
  Problem p{n, dim, nq, metric, draw(n), draw(nq)};
  if (metric == Metric::cosine) {
    testing::normalize(p.base, dim);
    testing::normalize(p.queries, dim);
  }
  return p;
}

double value(const Problem& p, int64_t q, int64_t j) {
  return testing::exact_value(p.metric == Metric::l2, &p.queries[q * p.dim], &p.base[j * p.dim], p.dim);
}

// Per query, the `keep` best (distance, row), closest first, ties to the smaller row; similarities
// negated while sorting.
std::vector<std::vector<std::pair<double, int64_t>>> reference(const Problem& p, int64_t keep,
                                                               const std::vector<uint8_t>* filter = nullptr) {
  const bool l2 = p.metric == Metric::l2;
  std::vector<std::vector<std::pair<double, int64_t>>> out(size_t(p.nq));
  for (int64_t q = 0; q < p.nq; ++q) {
    std::vector<std::pair<double, int64_t>> all;
    for (int64_t j = 0; j < p.n; ++j)
      if (testing::allowed(filter, j)) all.push_back({l2 ? value(p, q, j) : -value(p, q, j), j});
    const size_t top = std::min(all.size(), size_t(keep));
    std::partial_sort(all.begin(), all.begin() + top, all.end());
    all.resize(top);
    for (auto& e : all) e.first = l2 ? e.first : -e.first;
    out[q] = std::move(all);
  }
  return out;
}

// Checks one result against the reference: ids distinct, allowed and in range, each distance the
// exact one of its id (the re-rank computes it directly), closest first, padding where fewer than k
// rows exist. Returns the recall: the share of returned ids at least as close as the reference's
// k-th (so near-ties count as hits).
double check(const Problem& p, int64_t k, const std::vector<std::vector<std::pair<double, int64_t>>>& ref,
             const std::vector<float>& dist, const std::vector<int64_t>& ids,
             const std::vector<uint8_t>* filter = nullptr) {
  const bool l2 = p.metric == Metric::l2;
  int64_t hits = 0, total = 0;
  for (int64_t q = 0; q < p.nq; ++q) {
    std::set<int64_t> seen;
    const auto& r = ref[q];
    for (int64_t i = 0; i < k; ++i) {
      const float got = dist[q * k + i];
      const int64_t id = ids[q * k + i];
      if (i >= int64_t(r.size())) {
        EXPECT_EQ(id, -1) << "query " << q << " rank " << i;
        EXPECT_EQ(got, missing_distance(p.metric)) << "query " << q << " rank " << i;
        continue;
      }
      if (id < 0 || id >= p.n || !seen.insert(id).second || !testing::allowed(filter, id)) {
        ADD_FAILURE() << "query " << q << " rank " << i << ": bad, repeated or filtered id " << id;
        return 0;
      }
      const double exact = value(p, q, id);
      const double tolerance = 1e-6 * double(p.dim) * (1 + std::fabs(exact));
      EXPECT_NEAR(got, exact, tolerance) << "query " << q << " rank " << i << " id " << id;
      if (i > 0) {
        if (l2) EXPECT_LE(dist[q * k + i - 1], got) << "query " << q << " rank " << i;
        else EXPECT_GE(dist[q * k + i - 1], got) << "query " << q << " rank " << i;
      }
      const double kth = r[std::min<size_t>(size_t(k), r.size()) - 1].first;
      hits += l2 ? exact <= kth + tolerance : exact >= kth - tolerance;
      ++total;
    }
  }
  return total == 0 ? 1.0 : double(hits) / double(total);
}

struct Output {
  std::vector<float> dist;
  std::vector<int64_t> ids;
};

Output search(gpu::Resources& resources, const Problem& p, int64_t k, gpu::ComputeMode mode,
              const gpu::RowFilter& filter = {}) {
  Output o{std::vector<float>(size_t(p.nq * k), 12345.f), std::vector<int64_t>(size_t(p.nq * k), 12345)};
  gpu::knn(resources, p.metric, p.base.data(), nullptr, p.n, p.dim, p.queries.data(), p.nq, k, o.dist.data(),
           o.ids.data(), filter, mode);
  return o;
}

TEST(GpuKnnModes, CandidateCount) {
  QV_REQUIRE_GPU();
  EXPECT_EQ(gpu::knn_candidate_count(1), 32);
  EXPECT_EQ(gpu::knn_candidate_count(10), 32);
  EXPECT_EQ(gpu::knn_candidate_count(16), 32);
  EXPECT_EQ(gpu::knn_candidate_count(17), 64);
  EXPECT_EQ(gpu::knn_candidate_count(100), 256);
  EXPECT_EQ(gpu::knn_candidate_count(1000), 2048);
  EXPECT_EQ(gpu::knn_candidate_count(2048), 2048);
  for (int64_t k = 1; k <= 2048; ++k) ASSERT_GE(gpu::knn_candidate_count(k), k);
  // tf32: the margin itself where the fused kernel takes it.
  EXPECT_EQ(gpu::tf32_candidate_count(1), 17);
  EXPECT_EQ(gpu::tf32_candidate_count(10), 26);
  EXPECT_EQ(gpu::tf32_candidate_count(16), 32);
  EXPECT_EQ(gpu::tf32_candidate_count(17), 64);
  EXPECT_EQ(gpu::tf32_candidate_count(100), 256);
}

TEST(GpuKnnModes, MatchFloat64ReferenceOnAwkwardSizes) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  uint32_t seed = 100;
  struct Shape {
    int64_t n, dim, nq;
  };
  for (Metric metric : {Metric::l2, Metric::inner_product, Metric::cosine}) {
    if (testing::skip_under_sanitizer(metric == Metric::cosine)) continue;
    for (Shape s : {Shape{3000, 33, 20}, Shape{2500, 100, 9}, Shape{20, 7, 5}, Shape{1, 1, 2}, Shape{3001, 36, 260}}) {
      const Problem p = uniform_problem(s.n, s.dim, s.nq, metric, seed++);
      const auto ref = reference(p, 1000);
      for (int64_t k : {1, 10, 100, 1000}) {
        if (testing::skip_under_sanitizer(k == 1)) continue;  // the candidates and kernels of k = 10
        for (gpu::ComputeMode mode : kFastModes) {
          SCOPED_TRACE(::testing::Message() << mode_name(mode) << " " << metric_name(metric) << " n " << s.n
                                            << " dim " << s.dim << " k " << k);
          const Output o = search(resources, p, k, mode);
          EXPECT_GE(check(p, k, ref, o.dist, o.ids), 0.999);
        }
      }
    }
  }
  // k = 2048: no candidates beyond k.
  const Problem p = uniform_problem(2049, 129, 3, Metric::l2, seed++);
  const auto ref = reference(p, 2048);
  for (gpu::ComputeMode mode : kFastModes) {
    SCOPED_TRACE(mode_name(mode));
    const Output o = search(resources, p, 2048, mode);
    EXPECT_GE(check(p, 2048, ref, o.dist, o.ids), 0.99);
  }
}

// Small integers are exact in every mode, so approximate and exact distances agree, ties are exact,
// and the results must equal the reference's order (distance, row) exactly.
TEST(GpuKnnModes, TiesGoToTheSmallerRow) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    // Under the sanitizer 3001 rows (625 distinct vectors: ties everywhere still; an odd count leaves
    // a partial last slot of 16-bit keys) and 40 queries.
    const int64_t n = testing::sized(20000, 3001), nq = testing::sized(260, 40);
    Problem p{n, 4, nq, metric, testing::integer_vectors(n, 4, 7, 2), testing::integer_vectors(nq, 4, 8, 2)};
    for (int64_t j = 0; j < 200; ++j) std::copy_n(&p.base[j * p.dim], p.dim, &p.base[(p.n - 1 - j) * p.dim]);
    const auto ref = reference(p, 100);
    for (int64_t k : {1, 7, 100}) {
      if (testing::skip_under_sanitizer(k == 1)) continue;  // the candidates and kernels of k = 7
      for (gpu::ComputeMode mode : kFastModes) {
        const Output o = search(resources, p, k, mode);
        for (int64_t q = 0; q < p.nq; ++q)
          for (int64_t i = 0; i < k; ++i) {
            ASSERT_EQ(o.ids[q * k + i], ref[q][i].second)
                << mode_name(mode) << " " << metric_name(metric) << " k " << k << " query " << q << " rank " << i;
            ASSERT_EQ(o.dist[q * k + i], float(ref[q][i].first)) << mode_name(mode) << " query " << q << " rank " << i;
          }
      }
    }
  }
}

TEST(GpuKnnModes, ApplyTheRowFilter) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  std::mt19937 gen(3);
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    const Problem p = uniform_problem(6000, 20, 15, metric, 31);
    // About one row in 16 allowed (k = 1000 exceeds that for every query), bits stop before n.
    std::vector<uint8_t> bits(size_t(p.n / 8 - 10));
    for (auto& b : bits) b = uint8_t((gen() % 2 == 0 ? 1u : 0u) << (gen() % 8));
    const gpu::RowFilter filter{bits.data(), int64_t(bits.size()) * 8};
    const auto ref = reference(p, 1000, &bits);
    for (int64_t k : {5, 100, 1000}) {
      for (gpu::ComputeMode mode : kFastModes) {
        SCOPED_TRACE(::testing::Message() << mode_name(mode) << " " << metric_name(metric) << " k " << k);
        const Output o = search(resources, p, k, mode, filter);
        EXPECT_GE(check(p, k, ref, o.dist, o.ids, &bits), 0.999);
      }
    }
  }
}

TEST(GpuKnnModes, AcceptHostDeviceAndPinnedPointers) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const Problem p = uniform_problem(4000, 50, 64, Metric::l2, 77);
  const int64_t k = 32;
  const auto ref = reference(p, k);
  std::vector<float> norms(size_t(p.n));
  for (int64_t j = 0; j < p.n; ++j)
    norms[j] = float(testing::exact_value(false, &p.base[j * p.dim], &p.base[j * p.dim], p.dim));
  DeviceArray<float> base(p.base), queries(p.queries), base_norms(norms);
  DeviceArray<float> dist(size_t(p.nq * k));
  DeviceArray<int64_t> ids(size_t(p.nq * k));
  float* pinned_d = nullptr;
  int64_t* pinned_i = nullptr;
  QV_ASSERT_CUDA(cudaMallocHost(&pinned_d, sizeof(float) * p.nq * k));
  QV_ASSERT_CUDA(cudaMallocHost(&pinned_i, sizeof(int64_t) * p.nq * k));
  auto matrix = gpu::make_matrix(resources, p.dim);
  gpu::matrix_append(resources, *matrix, 1000, p.base.data());
  gpu::matrix_append(resources, *matrix, p.n - 1000, p.base.data() + 1000 * p.dim);
  for (gpu::ComputeMode mode : kFastModes) {
    SCOPED_TRACE(mode_name(mode));
    // Everything on the device.
    gpu::knn(resources, p.metric, base.get(), base_norms.get(), p.n, p.dim, queries.get(), p.nq, k, dist.get(),
             ids.get(), {}, mode);
    EXPECT_GE(check(p, k, ref, dist.to_host(), ids.to_host()), 0.999);
    // Host queries, device outputs, host norms.
    gpu::knn(resources, p.metric, base.get(), norms.data(), p.n, p.dim, p.queries.data(), p.nq, k, dist.get(),
             ids.get(), {}, mode);
    EXPECT_GE(check(p, k, ref, dist.to_host(), ids.to_host()), 0.999);
    // Device queries, pinned host outputs, host base.
    gpu::knn(resources, p.metric, p.base.data(), nullptr, p.n, p.dim, queries.get(), p.nq, k, pinned_d, pinned_i, {},
             mode);
    EXPECT_GE(check(p, k, ref, std::vector<float>(pinned_d, pinned_d + p.nq * k),
                    std::vector<int64_t>(pinned_i, pinned_i + p.nq * k)),
              0.999);
    // A DeviceMatrix, host queries and outputs.
    std::vector<float> hd(size_t(p.nq * k));
    std::vector<int64_t> hi(size_t(p.nq * k));
    gpu::knn(resources, p.metric, gpu::matrix_data(*matrix), gpu::matrix_norms(*matrix), gpu::matrix_rows(*matrix),
             p.dim, p.queries.data(), p.nq, k, hd.data(), hi.data(), {}, mode);
    EXPECT_GE(check(p, k, ref, hd, hi), 0.999);
  }
  cudaFreeHost(pinned_d);
  cudaFreeHost(pinned_i);
}

// The bar: recall@k >= 0.999 on 20k x 96, uniform and clustered, against float64 and
// against the fp32 mode.
TEST(GpuKnnModes, RecallOnUniformAndClusteredData) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  // Under the sanitizer 3001 rows and 100 queries (a miss in 1000 results still passes at k = 10).
  const int64_t n = testing::sized(20000, 3001), dim = 96, nq = testing::sized(300, 100);
  for (bool clustered : {false, true}) {
    for (Metric metric : {Metric::l2, Metric::inner_product, Metric::cosine}) {
      if (testing::skip_under_sanitizer(metric == Metric::cosine)) continue;
      const Problem p = clustered ? clustered_problem(n, dim, nq, metric, 500 + int(metric))
                                  : uniform_problem(n, dim, nq, metric, 600 + int(metric));
      const auto ref = reference(p, 100);
      for (int64_t k : {10, 100}) {
        const Output exact = search(resources, p, k, gpu::ComputeMode::fp32);
        for (gpu::ComputeMode mode : kFastModes) {
          SCOPED_TRACE(::testing::Message() << mode_name(mode) << " " << metric_name(metric) << " k " << k
                                            << (clustered ? " clustered" : " uniform"));
          const Output o = search(resources, p, k, mode);
          const double recall = check(p, k, ref, o.dist, o.ids);
          int64_t same = 0;
          for (int64_t q = 0; q < nq; ++q) {
            const std::set<int64_t> a(exact.ids.begin() + q * k, exact.ids.begin() + (q + 1) * k);
            for (int64_t i = 0; i < k; ++i) same += a.count(o.ids[q * k + i]);
          }
          const double vs_fp32 = double(same) / double(nq * k);
          std::printf("    %s %s %s k=%lld: recall %.5f (float64), %.5f (fp32 ids)\n", clustered ? "clustered" : "uniform",
                      metric_name(metric), mode_name(mode), (long long)k, recall, vs_fp32);
          EXPECT_GE(recall, 0.999);
          EXPECT_GE(vs_fp32, 0.999);
        }
      }
    }
  }
}

// Raw-pixel-like data (clustered, integers 0..255, inner products in the millions, as Fashion-MNIST's
// 5e7): the 16-bit distance tiles (fp16 scaled into half's range, bf16) keep recall >= 0.999.
TEST(GpuKnnModes, RecallOnPixelLikeData) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    // Under the sanitizer 4000 rows (each search is a 100 x n x 300 GEMM).
    Problem p = clustered_problem(testing::sized(20000, 4000), 300, 100, Metric::l2, 700 + int(metric));
    p.metric = metric;
    for (auto* v : {&p.base, &p.queries})
      for (auto& x : *v) x = std::round(std::clamp(128.f + 40.f * x, 0.f, 255.f));
    const auto ref = reference(p, 100);
    for (int64_t k : {10, 100}) {
      for (gpu::ComputeMode mode : kFastModes) {
        SCOPED_TRACE(::testing::Message() << mode_name(mode) << " " << metric_name(metric) << " k " << k);
        const Output o = search(resources, p, k, mode);
        const double recall = check(p, k, ref, o.dist, o.ids);
        std::printf("    pixels %s %s k=%lld: recall %.5f (float64)\n", metric_name(metric), mode_name(mode),
                    (long long)k, recall);
        EXPECT_GE(recall, 0.999);
      }
    }
  }
}

TEST(GpuKnnModes, Fp16RefusesValuesBeyondItsRange) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  // Raw pixels (0..255, like Fashion-MNIST) are exact in half precision.
  Problem p{3000, 40, 10, Metric::l2, testing::integer_vectors(3000, 40, 5, 127), testing::integer_vectors(10, 40, 6, 127)};
  for (auto& v : p.base) v += 128;
  for (auto& v : p.queries) v += 128;
  const auto ref = reference(p, 10);
  const Output o = search(resources, p, 10, gpu::ComputeMode::fp16);
  EXPECT_EQ(check(p, 10, ref, o.dist, o.ids), 1.0);

  auto status = [&](const Problem& q, gpu::ComputeMode mode) {
    try {
      search(resources, q, 10, mode);
    } catch (const Error& e) {
      return e.status();
    }
    return Status::ok;
  };
  Problem big_base = p, big_query = p, at_limit = p;
  big_base.base[123] = 1e5f;
  big_query.queries[7] = -70000.f;
  at_limit.base[5] = 65504.f;
  EXPECT_EQ(status(big_base, gpu::ComputeMode::fp16), Status::invalid_argument);
  EXPECT_EQ(status(big_query, gpu::ComputeMode::fp16), Status::invalid_argument);
  EXPECT_EQ(status(at_limit, gpu::ComputeMode::fp16), Status::ok);
  EXPECT_EQ(status(big_base, gpu::ComputeMode::bf16), Status::ok);
  EXPECT_EQ(status(big_base, gpu::ComputeMode::tf32), Status::ok);
  EXPECT_EQ(status(p, static_cast<gpu::ComputeMode>(7)), Status::invalid_argument);
  // The resources stay usable after a refusal.
  const Output again = search(resources, p, 10, gpu::ComputeMode::fp16);
  EXPECT_EQ(again.ids, o.ids);
}

}  // namespace
}  // namespace quiver
