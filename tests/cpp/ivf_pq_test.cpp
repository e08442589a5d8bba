// IVF-PQ on the CPU: the look-up tables against a direct computation, recall against exact search
// (with and without OPQ and Refine), filters, removal and the training rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "cpp/core/error.h"
#include "cpp/index/ivf_model.h"
#include "cpp/index/ivf_pq.h"
#include "cpp/index/ivf_spec.h"
#include "cpp/quantize/pq_tables.h"
#include "ivf_testing.h"

namespace quiver {
namespace {

using testing::build;
using testing::clustered_vectors;
using testing::probing;
using testing::recall;
using testing::search;

constexpr int64_t kN = 3000, kDim = 48, kNq = 100, kNlist = 16, kK = 10;

// The scorer's key for a code equals the distance to the entry's reconstruction c + decode(code),
// with precomputed term-1 tables, with direct tables, and for inner product.
TEST(IvfPqTables, KeysAreDistancesToTheReconstruction) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(kN, kDim, 20, 1);
  const auto q = clustered_vectors(5, kDim, 20, 2);
  for (Metric metric : {Metric::l2, Metric::inner_product}) {
    const IvfModel model =
        train_ivf_model(context, parse_ivf_descriptor("IVF8,PQ12", kDim), metric, kDim, kN, x.data(), {});
    const std::vector<float> tables = make_pq_list_tables(context.pool(), model);
    EXPECT_EQ(tables.empty(), metric != Metric::l2);
    std::mt19937 gen(3);
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<uint8_t> code(static_cast<size_t>(model.pq.m));
    std::vector<float> decoded(kDim), inner_products(static_cast<size_t>(model.pq.m * kPqCentroids));
    const std::vector<float> no_tables;
    PqListScorer precomputed(model, tables), direct(model, no_tables);
    for (int64_t qi = 0; qi < 5; ++qi) {
      const float* query = q.data() + qi * kDim;
      pq_query_inner_products(model.pq, query, inner_products.data());
      precomputed.set_query(query, inner_products.data());
      direct.set_query(query, inner_products.data());
      for (int64_t list = 0; list < model.nlist; ++list) {
        const float* centroid = model.centroids.data() + list * kDim;
        double coarse = 0;  // what probe_lists gives: squared L2 distance, or inner product
        for (int64_t d = 0; d < kDim; ++d)
          coarse += metric == Metric::l2 ? (query[d] - centroid[d]) * double(query[d] - centroid[d])
                                         : double(query[d]) * centroid[d];
        const float bias_a = precomputed.prepare(list, static_cast<float>(coarse));
        const std::vector<float> table_a(precomputed.table(), precomputed.table() + inner_products.size());
        const float bias_b = direct.prepare(list, static_cast<float>(coarse));
        for (int trial = 0; trial < 4; ++trial) {
          for (auto& c : code) c = static_cast<uint8_t>(byte(gen));
          pq_decode(model.pq, 1, code.data(), decoded.data());
          double want = 0;
          for (int64_t d = 0; d < kDim; ++d) {
            const double y = double(centroid[d]) + decoded[d];
            want += metric == Metric::l2 ? (query[d] - y) * (query[d] - y) : -query[d] * y;
          }
          double key_a = bias_a, key_b = bias_b;
          for (int64_t s = 0; s < model.pq.m; ++s) {
            key_a += table_a[s * kPqCentroids + code[s]];
            key_b += direct.table()[s * kPqCentroids + code[s]];
          }
          const double tolerance = 1e-3 * std::max(1.0, std::abs(want));
          EXPECT_NEAR(key_a, want, tolerance);
          EXPECT_NEAR(key_b, want, tolerance);
        }
      }
    }
  }
}

class IvfPq : public ::testing::TestWithParam<Metric> {
 protected:
  Context context_{testing::cpu_options()};
  std::vector<float> x_ = clustered_vectors(kN, kDim, 20, 1);
  std::vector<float> q_ = clustered_vectors(kNq, kDim, 20, 2);
};

TEST_P(IvfPq, RecallIsSaneAndRefineReachesExact) {
  const Metric metric = GetParam();
  auto flat = build(context_, "Flat", kDim, metric, x_);
  const auto truth = search(*flat, q_, kK);
  auto refined = build(context_, "IVF16,PQ16,Refine", kDim, metric, x_);
  EXPECT_EQ(refined->kind(), IndexKind::ivf_pq);
  // refine_factor 1 re-ranks the k best by PQ distance: the plain IVF-PQ result, reordered.
  const double plain = recall(search(*refined, q_, kK, probing(kNlist, 1)), truth, kNq, kK);
  EXPECT_GT(plain, 0.5);
  const auto exact_again = search(*refined, q_, kK, probing(kNlist, 16));
  EXPECT_GE(recall(exact_again, truth, kNq, kK), 0.99);
  // Refined distances are exact.
  for (size_t i = 0; i < truth.ids.size(); ++i)
    if (exact_again.ids[i] == truth.ids[i])
      EXPECT_NEAR(exact_again.distances[i], truth.distances[i], 1e-3f * std::max(1.0f, std::abs(truth.distances[i])));
  // The default refine factor (8) lies between.
  const double by_default = recall(search(*refined, q_, kK, probing(kNlist)), truth, kNq, kK);
  EXPECT_GE(by_default, plain);
  double previous = 0;
  for (uint32_t nprobe : {1u, 4u, 16u}) {
    const double r = recall(search(*refined, q_, kK, probing(nprobe, 16)), truth, kNq, kK);
    EXPECT_GE(r, previous - 0.02) << "nprobe " << nprobe;
    previous = r;
  }
}

TEST_P(IvfPq, OpqWorks) {
  const Metric metric = GetParam();
  auto flat = build(context_, "Flat", kDim, metric, x_);
  const auto truth = search(*flat, q_, kK);
  auto refined = build(context_, "OPQ16,IVF16,PQ8,Refine", kDim, metric, x_);
  EXPECT_GT(recall(search(*refined, q_, kK, probing(kNlist, 1)), truth, kNq, kK), 0.35);
  EXPECT_GE(recall(search(*refined, q_, kK, probing(kNlist, 32)), truth, kNq, kK), 0.98);
}

TEST_P(IvfPq, RangeSearchUsesPqOrExactDistances) {
  const Metric metric = GetParam();
  auto flat = build(context_, "Flat", kDim, metric, x_);
  const float radius = search(*flat, q_, 20).distances[19];
  const RangeResult want = flat->range_search(kNq, q_.data(), radius, SearchOptions{});
  auto refined = build(context_, "IVF16,PQ8,Refine", kDim, metric, x_);
  const RangeResult exact = refined->range_search(kNq, q_.data(), radius, probing(kNlist));
  EXPECT_EQ(exact.lims, want.lims);
  auto pq = build(context_, "IVF16,PQ8", kDim, metric, x_);
  const RangeResult approx = pq->range_search(kNq, q_.data(), radius, probing(kNlist));
  ASSERT_EQ(approx.lims.size(), static_cast<size_t>(kNq + 1));
  // PQ distances: each hit within the radius, closest first; the hits are mostly the true ones.
  int64_t common = 0;
  for (int64_t q = 0; q < kNq; ++q) {
    for (int64_t i = approx.lims[q]; i < approx.lims[q + 1]; ++i) {
      EXPECT_TRUE(metric == Metric::l2 ? approx.distances[i] <= radius : approx.distances[i] >= radius);
      if (i > approx.lims[q])
        EXPECT_TRUE(metric == Metric::l2 ? approx.distances[i - 1] <= approx.distances[i]
                                         : approx.distances[i - 1] >= approx.distances[i]);
      common += std::count(want.ids.begin() + want.lims[q], want.ids.begin() + want.lims[q + 1], approx.ids[i]);
    }
  }
  EXPECT_GT(common, want.lims[kNq] / 3);
}

INSTANTIATE_TEST_SUITE_P(Metrics, IvfPq, ::testing::Values(Metric::l2, Metric::inner_product, Metric::cosine),
                         [](const auto& info) {
                           return std::string(info.param == Metric::l2              ? "L2"
                                              : info.param == Metric::inner_product ? "InnerProduct"
                                                                                    : "Cosine");
                         });

TEST(IvfPqRules, FilterInsideTheScanAndRemove) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(kN, kDim, 20, 1);
  const auto q = clustered_vectors(kNq, kDim, 20, 2);
  auto index = build(context, "IVF16,PQ8,Refine", kDim, Metric::l2, x);
  std::vector<uint8_t> filter((kN + 7) / 8, 0);
  for (int64_t id = 0; id < kN; id += 4) filter[id / 8] |= static_cast<uint8_t>(1u << (id % 8));
  SearchOptions options = probing(2);
  options.filter = {filter.data(), kN};
  for (int64_t id : search(*index, q, kK, options).ids) EXPECT_TRUE(id >= 0 && id % 4 == 0) << id;
  auto plain = build(context, "IVF16,PQ8", kDim, Metric::l2, x);
  for (int64_t id : search(*plain, q, kK, options).ids) EXPECT_TRUE(id >= 0 && id % 4 == 0) << id;

  std::vector<int64_t> odd;
  for (int64_t id = 1; id < kN; id += 2) odd.push_back(id);
  EXPECT_EQ(index->remove(static_cast<int64_t>(odd.size()), odd.data()), kN / 2);
  EXPECT_EQ(index->count(), kN - kN / 2);
  for (int64_t id : search(*index, q, kK, probing(kNlist)).ids) EXPECT_TRUE(id >= 0 && id % 2 == 0) << id;
}

TEST(IvfPqRules, TrainingRules) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(kN, kDim, 20, 1);
  auto index = create_index(context, "IVF16,PQ8", kDim, Metric::l2);
  try {
    index->train(200, x.data());
    ADD_FAILURE() << "trained PQ on 200 vectors";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("needs at least 256 vectors"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(index->is_trained());
  index->train(kN, x.data());
  EXPECT_TRUE(index->is_trained());
}

TEST(IvfPqRules, DeterministicTrainingAndThreads) {
  const auto x = clustered_vectors(kN, kDim, 20, 1);
  const auto q = clustered_vectors(kNq, kDim, 20, 2);
  testing::expect_same_whatever_the_threads("OPQ8,IVF16,PQ8", kDim, x, q, kK, probing(4), {1, 2});
}

TEST(IvfPqRules, MemoryIsMostlyCodes) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(kN, kDim, 20, 1);
  auto pq = build(context, "IVF16,PQ8", kDim, Metric::l2, x);
  auto refined = build(context, "IVF16,PQ8,Refine", kDim, Metric::l2, x);
  auto flat = build(context, "IVF16,Flat", kDim, Metric::l2, x);
  EXPECT_LT(pq->memory().host_bytes, flat->memory().host_bytes);
  EXPECT_GE(refined->memory().host_bytes - pq->memory().host_bytes, kN * kDim * 4);
}

}  // namespace
}  // namespace quiver
