// IVF-Flat on the CPU against exact search: nprobe = nlist is exact, recall grows with nprobe, and
// add / remove / filters / range search / training rules behave as documented.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cpp/core/error.h"
#include "ivf_testing.h"

namespace quiver {
namespace {

using testing::build;
using testing::clustered_vectors;
using testing::probing;
using testing::recall;
using testing::search;
using testing::status_of;

constexpr int64_t kN = 3000, kDim = 37, kNq = 100, kNlist = 16, kK = 10;

class IvfFlat : public ::testing::TestWithParam<Metric> {
 protected:
  Context context_{testing::cpu_options()};
  std::vector<float> x_ = clustered_vectors(kN, kDim, 20, 1);
  std::vector<float> q_ = clustered_vectors(kNq, kDim, 20, 2);
};

TEST_P(IvfFlat, AllListsEqualsExactSearch) {
  const Metric metric = GetParam();
  auto flat = build(context_, "Flat", kDim, metric, x_);
  auto ivf = build(context_, "IVF16,Flat", kDim, metric, x_);
  EXPECT_EQ(ivf->kind(), IndexKind::ivf_flat);
  EXPECT_EQ(ivf->count(), kN);
  const auto want = search(*flat, q_, kK);
  const auto got = search(*ivf, q_, kK, probing(kNlist));
  EXPECT_EQ(got.ids, want.ids);
  for (size_t i = 0; i < want.distances.size(); ++i)
    EXPECT_NEAR(got.distances[i], want.distances[i], 1e-4f * std::max(1.0f, std::abs(want.distances[i])));
}

TEST_P(IvfFlat, RecallGrowsWithNprobe) {
  const Metric metric = GetParam();
  auto flat = build(context_, "Flat", kDim, metric, x_);
  auto ivf = build(context_, "IVF16,Flat", kDim, metric, x_);
  const auto truth = search(*flat, q_, kK);
  double previous = 0;
  for (uint32_t nprobe : {1u, 2u, 4u, 8u, 16u}) {
    const double r = recall(search(*ivf, q_, kK, probing(nprobe)), truth, kNq, kK);
    EXPECT_GE(r, previous - 1e-9) << "nprobe " << nprobe;
    previous = r;
  }
  EXPECT_EQ(previous, 1.0);
  EXPECT_GT(recall(search(*ivf, q_, kK, probing(4)), truth, kNq, kK), 0.6);
}

TEST_P(IvfFlat, RangeSearchOverAllListsEqualsExact) {
  const Metric metric = GetParam();
  auto flat = build(context_, "Flat", kDim, metric, x_);
  auto ivf = build(context_, "IVF16,Flat", kDim, metric, x_);
  // A radius that catches a few dozen vectors per query.
  const auto kth = search(*flat, q_, 30);
  const float radius = kth.distances[29];
  const RangeResult want = flat->range_search(kNq, q_.data(), radius, SearchOptions{});
  const RangeResult got = ivf->range_search(kNq, q_.data(), radius, probing(kNlist));
  EXPECT_EQ(got.lims, want.lims);
  EXPECT_EQ(got.ids.size(), want.ids.size());
  for (int64_t q = 0; q < kNq; ++q) {
    std::vector<int64_t> a(got.ids.begin() + got.lims[q], got.ids.begin() + got.lims[q + 1]);
    std::vector<int64_t> b(want.ids.begin() + want.lims[q], want.ids.begin() + want.lims[q + 1]);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b) << "query " << q;
  }
  // Fewer lists, fewer (or as many) hits, each within the radius.
  const RangeResult few = ivf->range_search(kNq, q_.data(), radius, probing(2));
  EXPECT_LE(few.lims[kNq], got.lims[kNq]);
  for (float d : few.distances) EXPECT_TRUE(metric == Metric::l2 ? d <= radius : d >= radius);
}

INSTANTIATE_TEST_SUITE_P(Metrics, IvfFlat,
                         ::testing::Values(Metric::l2, Metric::inner_product, Metric::cosine),
                         [](const auto& info) {
                           return std::string(info.param == Metric::l2              ? "L2"
                                              : info.param == Metric::inner_product ? "InnerProduct"
                                                                                    : "Cosine");
                         });

TEST(IvfFlatRules, TrainingNeedsEnoughVectorsAndComesFirst) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(500, kDim, 20, 1);
  auto index = create_index(context, "IVF1024,Flat", kDim, Metric::l2);
  EXPECT_FALSE(index->is_trained());
  try {
    index->train(500, x.data());
    ADD_FAILURE() << "trained IVF1024 on 500 vectors";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("training IVF1024 needs at least 1024 vectors"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(index->is_trained());
  std::vector<float> d(kK);
  std::vector<int64_t> ids(kK);
  EXPECT_EQ(status_of([&] { index->add(10, x.data(), nullptr); }), Status::not_trained);
  EXPECT_EQ(status_of([&] { index->search(1, x.data(), kK, SearchOptions{}, d.data(), ids.data()); }),
            Status::not_trained);
  EXPECT_EQ(status_of([&] { index->range_search(1, x.data(), 1.0f, SearchOptions{}); }), Status::not_trained);
  EXPECT_EQ(index->remove(1, ids.data()), 0);
}

TEST(IvfFlatRules, RetrainingOnlyWhileEmpty) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(kN, kDim, 20, 1);
  auto index = create_index(context, "IVF16,Flat", kDim, Metric::l2);
  index->train(kN, x.data());
  index->train(kN / 2, x.data());  // empty: the model is replaced
  index->add(kN, x.data(), nullptr);
  EXPECT_EQ(status_of([&] { index->train(kN, x.data()); }), Status::invalid_argument);
  EXPECT_EQ(index->count(), kN);
  std::vector<int64_t> all(kN);
  for (int64_t i = 0; i < kN; ++i) all[i] = i;
  EXPECT_EQ(index->remove(kN, all.data()), kN);
  index->train(kN, x.data());
}

TEST(IvfFlatRules, NprobeOutOfRangeIsRefusedAndDefaultWorks) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(kN, kDim, 20, 1);
  auto index = build(context, "IVF16,Flat", kDim, Metric::l2, x);
  std::vector<float> d(kK);
  std::vector<int64_t> ids(kK);
  for (uint32_t nprobe : {0u, 17u, 1000u}) {
    EXPECT_EQ(status_of([&] { index->search(1, x.data(), kK, probing(nprobe), d.data(), ids.data()); }),
              Status::invalid_argument);
    EXPECT_EQ(status_of([&] { index->range_search(1, x.data(), 1.0f, probing(nprobe)); }), Status::invalid_argument);
  }
  // The default (kNprobeDefault) probes min(nlist, 8) lists: the same as nprobe = 8.
  const auto q = clustered_vectors(20, kDim, 20, 3);
  const auto by_default = search(*index, q, kK);
  const auto eight = search(*index, q, kK, probing(8));
  EXPECT_EQ(by_default.ids, eight.ids);
}

TEST(IvfFlatRules, AddWithIdsRemoveAndFilter) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(kN, kDim, 20, 1);
  const auto q = clustered_vectors(kNq, kDim, 20, 2);
  std::vector<int64_t> ids(kN);
  for (int64_t i = 0; i < kN; ++i) ids[i] = 1000000 + 7 * i;
  auto ivf = create_index(context, "IVF16,Flat", kDim, Metric::l2);
  ivf->train(kN, x.data());
  // Added in two parts: lists grow without a rebuild.
  ivf->add(kN / 3, x.data(), ids.data());
  ivf->add(kN - kN / 3, x.data() + kN / 3 * kDim, ids.data() + kN / 3);
  auto flat = build(context, "Flat", kDim, Metric::l2, x, ids.data());
  EXPECT_EQ(search(*ivf, q, kK, probing(kNlist)).ids, search(*flat, q, kK).ids);

  // Duplicates: within the call and against the index; nothing is added.
  const int64_t dup_in_call[2] = {5, 5};
  EXPECT_EQ(status_of([&] { ivf->add(2, x.data(), dup_in_call); }), Status::invalid_argument);
  EXPECT_EQ(status_of([&] { ivf->add(1, x.data(), &ids[17]); }), Status::invalid_argument);
  const int64_t negative = -4;
  EXPECT_EQ(status_of([&] { ivf->add(1, x.data(), &negative); }), Status::invalid_argument);
  EXPECT_EQ(ivf->count(), kN);

  // Remove every third vector (and ids that are not there).
  std::vector<int64_t> gone;
  for (int64_t i = 0; i < kN; i += 3) gone.push_back(ids[i]);
  gone.push_back(42);
  EXPECT_EQ(ivf->remove(static_cast<int64_t>(gone.size()), gone.data()), (kN + 2) / 3);
  EXPECT_EQ(flat->remove(static_cast<int64_t>(gone.size()), gone.data()), (kN + 2) / 3);
  EXPECT_EQ(ivf->count(), kN - (kN + 2) / 3);
  EXPECT_EQ(search(*ivf, q, kK, probing(kNlist)).ids, search(*flat, q, kK).ids);
  // Removed ids can be added again; automatic ids continue after the largest.
  ivf->add(1, x.data(), &ids[0]);
  flat->add(1, x.data(), &ids[0]);
  ivf->add(1, x.data() + kDim, nullptr);
  flat->add(1, x.data() + kDim, nullptr);
  EXPECT_EQ(search(*ivf, q, kK, probing(kNlist)).ids, search(*flat, q, kK).ids);

  // A filter allowing ids with a given residue: applied inside the scan, so k results still come.
  const int64_t bits = ids.back() + 10;
  std::vector<uint8_t> filter(static_cast<size_t>((bits + 7) / 8), 0);
  for (int64_t id = 0; id < bits; ++id)
    if (id % 5 == 0) filter[id / 8] |= static_cast<uint8_t>(1u << (id % 8));
  SearchOptions options = probing(kNlist);
  options.filter = {filter.data(), bits};
  SearchOptions flat_options;
  flat_options.filter = options.filter;
  const auto got = search(*ivf, q, kK, options);
  EXPECT_EQ(got.ids, search(*flat, q, kK, flat_options).ids);
  for (int64_t id : got.ids) EXPECT_TRUE(id >= 0 && id % 5 == 0) << id;
  options.nprobe = 2;
  for (int64_t id : search(*ivf, q, kK, options).ids) EXPECT_TRUE(id == -1 || id % 5 == 0) << id;
}

TEST(IvfFlatRules, LargeKPadsMissingResults) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(300, 5, 4, 1);
  auto index = build(context, "IVF4,Flat", 5, Metric::inner_product, x);
  const auto r = search(*index, std::vector<float>(x.begin(), x.begin() + 10), kMaxK, probing(1));
  for (int64_t q = 0; q < 2; ++q) {
    int64_t found = 0;
    for (int64_t i = 0; i < kMaxK; ++i) {
      const int64_t id = r.ids[q * kMaxK + i];
      if (id < 0) {
        EXPECT_EQ(r.distances[q * kMaxK + i], -std::numeric_limits<float>::infinity());
      } else {
        EXPECT_EQ(i, found) << "results are packed first";
        ++found;
        if (i > 0) EXPECT_GE(r.distances[q * kMaxK + i - 1], r.distances[q * kMaxK + i]);
      }
    }
    EXPECT_GT(found, 0);
    EXPECT_LT(found, 300);
  }
}

TEST(IvfFlatRules, DeterministicWhateverTheThreads) {
  const auto x = clustered_vectors(kN, kDim, 20, 1);
  const auto q = clustered_vectors(kNq, kDim, 20, 2);
  testing::expect_same_whatever_the_threads("IVF16,Flat", kDim, x, q, kK, probing(3), {1, 2, 3});
}

TEST(IvfFlatRules, MemoryCountsTheLists) {
  Context context(testing::cpu_options());
  const auto x = clustered_vectors(kN, kDim, 20, 1);
  auto index = create_index(context, "IVF16,Flat", kDim, Metric::l2);
  EXPECT_EQ(index->memory().device_bytes, 0);
  index->train(kN, x.data());
  const int64_t trained = index->memory().host_bytes;
  EXPECT_GE(trained, kNlist * kDim * 4);
  index->add(kN, x.data(), nullptr);
  EXPECT_GE(index->memory().host_bytes - trained, kN * (kDim * 4 + 8 + 4));
  EXPECT_LE(index->memory().host_bytes - trained, 3 * kN * (kDim * 4 + 8 + 4) + kN * 64);
}

}  // namespace
}  // namespace quiver
