// Inverted-file indexes through the C API: descriptors, training, nprobe and refine_factor in the
// search parameters (with their struct versions), bad input, save/load and info.
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

// n x dim vectors around 20 fixed centres: IVF's natural input.
std::vector<float> Clustered(int64_t n, int64_t dim, uint64_t seed) { return ClusteredVectors(n, dim, 20, 99, seed); }

qv_search_params_t Params(uint32_t nprobe, uint32_t refine_factor = 0) {
  qv_search_params_t p;
  qv_search_params_init(&p);
  p.nprobe = nprobe;
  p.refine_factor = refine_factor;
  return p;
}

class CapiIvf : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext(2);
    ASSERT_TRUE(ctx_) << qv_last_error_message();
  }
  Index Build(const char* descriptor, int64_t dim, qv_metric_t metric, const std::vector<float>& x,
              const int64_t* ids = nullptr) {
    qv_index_t* raw = nullptr;
    EXPECT_EQ(qv_index_create(ctx_.get(), descriptor, dim, metric, &raw), QV_OK) << qv_last_error_message();
    Index index(raw);
    const int64_t n = static_cast<int64_t>(x.size()) / dim;
    EXPECT_EQ(qv_index_train(index.get(), n, x.data()), QV_OK) << qv_last_error_message();
    EXPECT_EQ(qv_index_add(index.get(), n, x.data(), ids), QV_OK) << qv_last_error_message();
    return index;
  }
  Context ctx_;
  const int64_t n_ = 3000, nq_ = 50;
};

TEST_F(CapiIvf, FlatWithEveryListIsExactInEveryMetric) {
  const int64_t dim = 37;
  const auto x = Clustered(n_, dim, 1), q = Clustered(nq_, dim, 2);
  for (qv_metric_t metric : {QV_METRIC_L2, QV_METRIC_INNER_PRODUCT, QV_METRIC_COSINE}) {
    Index ivf = Build("IVF16,Flat", dim, metric, x);
    const qv_search_params_t all = Params(16);
    Results r;
    QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, &all, &r));
    EXPECT_TRUE(CheckKnn(metric, x, Iota(n_), dim, q, 10, r.distances, r.ids)) << MetricName(metric);
    // Fewer lists: a subset of the truth, at a recall that grows with nprobe.
    Results one, four;
    const qv_search_params_t p1 = Params(1), p4 = Params(4);
    QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, &p1, &one));
    QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, &p4, &four));
    EXPECT_LE(IdOverlap(one, r, nq_, 10), IdOverlap(four, r, nq_, 10));
  }
}

TEST_F(CapiIvf, ParamsDefaultsAndOlderStructs) {
  const int64_t dim = 16;
  const auto x = Clustered(n_, dim, 1), q = Clustered(nq_, dim, 2);
  Index ivf = Build("IVF32,Flat", dim, QV_METRIC_L2, x);
  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  EXPECT_EQ(p.nprobe, QV_NPROBE_DEFAULT);
  EXPECT_EQ(p.refine_factor, 0u);
  // The default nprobe is min(nlist, 8); NULL params are the defaults.
  Results by_default, null_params, eight;
  QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, &p, &by_default));
  QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, nullptr, &null_params));
  const qv_search_params_t p8 = Params(8);
  QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, &p8, &eight));
  EXPECT_TRUE(by_default == eight);
  EXPECT_TRUE(null_params == eight);
  // A caller whose struct ends before nprobe gets the default nprobe, not 0.
  qv_search_params_t old = Params(0);
  old.struct_size = static_cast<uint32_t>(offsetof(qv_search_params_t, nprobe));
  Results older;
  QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, &old, &older));
  EXPECT_TRUE(older == eight);
  // A caller whose struct ends at compute_mode: refine_factor is not read.
  qv_search_params_t before_refine = Params(8, 0xDEADu);
  before_refine.struct_size = static_cast<uint32_t>(offsetof(qv_search_params_t, compute_mode) +
                                                    sizeof(qv_compute_mode_t));
  QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, &before_refine, &older));
  EXPECT_TRUE(older == eight);
}

TEST_F(CapiIvf, BadNprobeIsInvalidAndFlatIgnoresIt) {
  const int64_t dim = 8;
  const auto x = Clustered(n_, dim, 1), q = Clustered(nq_, dim, 2);
  Index ivf = Build("IVF16,Flat", dim, QV_METRIC_L2, x);
  Results r;
  for (uint32_t nprobe : {0u, 17u, 100000u}) {
    const qv_search_params_t p = Params(nprobe);
    EXPECT_TRUE(FailsNaming(Search(ivf.get(), q, dim, 10, &p, &r), QV_ERR_INVALID_ARGUMENT, "nprobe"));
    qv_range_result_t* range = nullptr;
    EXPECT_TRUE(FailsNaming(qv_index_range_search(ivf.get(), nq_, q.data(), 1.0f, &p, &range),
                            QV_ERR_INVALID_ARGUMENT, "nprobe"));
    EXPECT_EQ(range, nullptr);
  }
  Index flat = MakeIndex(ctx_.get(), dim, QV_METRIC_L2);
  QV_ASSERT_OK(qv_index_add(flat.get(), n_, x.data(), nullptr));
  const qv_search_params_t zero = Params(0);
  QV_EXPECT_OK(Search(flat.get(), q, dim, 10, &zero, &r));
}

TEST_F(CapiIvf, BadDescriptorsAndTraining) {
  qv_index_t* raw = nullptr;
  struct Case {
    const char* descriptor;
    int64_t dim;
    const char* says;
  };
  for (const Case& c : {Case{"IVF16,PQ7", 48, "divide"}, Case{"IVF16,PQ64", 48, "exceeds"},
                        Case{"IVF0,Flat", 8, "nlist"}, Case{"IVF16", 8, "followed"},
                        Case{"IVF16,Flat,Refine", 8, "Refine"}, Case{"IVFx,Flat", 8, "nlist"},
                        Case{"OPQ3,IVF4,PQ4", 8, "divide"}}) {
    EXPECT_EQ(qv_index_create(ctx_.get(), c.descriptor, c.dim, QV_METRIC_L2, &raw), QV_ERR_INVALID_ARGUMENT)
        << c.descriptor;
    EXPECT_EQ(raw, nullptr);
    EXPECT_NE(std::string(qv_last_error_message()).find(c.says), std::string::npos)
        << c.descriptor << ": " << qv_last_error_message();
    EXPECT_NE(std::string(qv_last_error_message()).find(c.descriptor), std::string::npos);
  }

  const int64_t dim = 8;
  const auto x = Clustered(500, dim, 1);
  QV_ASSERT_OK(qv_index_create(ctx_.get(), "IVF1024,Flat", dim, QV_METRIC_L2, &raw));
  Index ivf(raw);
  qv_index_info_t info;
  qv_index_info_init(&info);
  QV_ASSERT_OK(qv_index_info(ivf.get(), &info));
  EXPECT_EQ(info.is_trained, 0);
  EXPECT_EQ(qv_index_train(ivf.get(), 500, x.data()), QV_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qv_last_error_message()).find("training IVF1024 needs at least 1024 vectors, got 500"),
            std::string::npos)
      << qv_last_error_message();
  EXPECT_EQ(qv_index_add(ivf.get(), 10, x.data(), nullptr), QV_ERR_NOT_TRAINED);
  Results r;
  EXPECT_EQ(Search(ivf.get(), std::vector<float>(x.begin(), x.begin() + dim), dim, 5, nullptr, &r),
            QV_ERR_NOT_TRAINED);

  QV_ASSERT_OK(qv_index_create(ctx_.get(), "IVF4,PQ4", dim, QV_METRIC_L2, &raw));
  Index pq(raw);
  EXPECT_EQ(qv_index_train(pq.get(), 100, x.data()), QV_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qv_last_error_message()).find("256"), std::string::npos);
  QV_ASSERT_OK(qv_index_train(pq.get(), 500, x.data()));
  QV_ASSERT_OK(qv_index_add(pq.get(), 500, x.data(), nullptr));
  EXPECT_EQ(qv_index_train(pq.get(), 500, x.data()), QV_ERR_INVALID_ARGUMENT);  // holds vectors
  EXPECT_EQ(Count(pq.get()), 500);
}

TEST_F(CapiIvf, DuplicateIdsLeaveTheIndexUnchanged) {
  const int64_t dim = 12;
  const auto x = Clustered(n_, dim, 1), q = Clustered(nq_, dim, 2);
  std::vector<int64_t> ids = Iota(n_, 100);
  Index ivf = Build("IVF8,PQ4", dim, QV_METRIC_L2, x, ids.data());
  Results before, after;
  QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, nullptr, &before));
  std::vector<int64_t> again = {7, 8, 150};  // 150 is in the index
  EXPECT_TRUE(FailsNaming(qv_index_add(ivf.get(), 3, x.data(), again.data()), QV_ERR_INVALID_ARGUMENT, "ids"));
  EXPECT_EQ(Count(ivf.get()), n_);
  QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, nullptr, &after));
  EXPECT_TRUE(before == after);
  int64_t removed = -1;
  QV_ASSERT_OK(qv_index_remove(ivf.get(), 3, again.data(), &removed));
  EXPECT_EQ(removed, 1);
  EXPECT_EQ(Count(ivf.get()), n_ - 1);
}

TEST_F(CapiIvf, RefineFactorRaisesRecall) {
  const int64_t dim = 48;
  const auto x = Clustered(n_, dim, 1), q = Clustered(nq_, dim, 2);
  Index flat = MakeIndex(ctx_.get(), dim, QV_METRIC_L2);
  QV_ASSERT_OK(qv_index_add(flat.get(), n_, x.data(), nullptr));
  Results truth;
  QV_ASSERT_OK(Search(flat.get(), q, dim, 10, nullptr, &truth));
  Index ivf = Build("IVF16,PQ8,Refine", dim, QV_METRIC_L2, x);
  Results one, many;
  const qv_search_params_t p1 = Params(16, 1), p32 = Params(16, 32);
  QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, &p1, &one));
  QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, &p32, &many));
  EXPECT_LT(IdOverlap(one, truth, nq_, 10), 0.95);
  EXPECT_GE(IdOverlap(many, truth, nq_, 10), 0.99);
  // Refined distances are exact.
  EXPECT_TRUE(CheckKnn(QV_METRIC_L2, x, Iota(n_), dim, std::vector<float>(q.begin(), q.begin() + dim), 1,
                       std::vector<float>(many.distances.begin(), many.distances.begin() + 1),
                       std::vector<int64_t>(many.ids.begin(), many.ids.begin() + 1)));
}

TEST_F(CapiIvf, SaveLoadFileAndBufferAndInfo) {
  const int64_t dim = 16;
  const auto x = Clustered(n_, dim, 1), q = Clustered(nq_, dim, 2);
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  for (const char* descriptor : {"IVF8,Flat", "OPQ4,IVF8,PQ4,Refine"}) {
    Index ivf = Build(descriptor, dim, QV_METRIC_COSINE, x);
    qv_index_info_t info;
    qv_index_info_init(&info);
    QV_ASSERT_OK(qv_index_info(ivf.get(), &info));
    EXPECT_EQ(info.is_trained, 1);
    EXPECT_EQ(info.count, n_);
    EXPECT_EQ(info.device, QV_DEVICE_CPU);
    EXPECT_EQ(info.device_bytes, 0);
    EXPECT_GT(info.host_bytes, n_ * 8);
    EXPECT_STREQ(info.descriptor, descriptor);
    const qv_search_params_t p = Params(3);
    Results want, from_file, from_buffer;
    QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, &p, &want));

    const std::string path = dir.File("ivf.qv");
    QV_ASSERT_OK(qv_index_save(ivf.get(), path.c_str()));
    qv_index_t* raw = nullptr;
    QV_ASSERT_OK(qv_index_load(ctx_.get(), path.c_str(), &raw));
    Index loaded(raw);
    QV_ASSERT_OK(Search(loaded.get(), q, dim, 10, &p, &from_file));
    EXPECT_TRUE(from_file == want) << descriptor;

    void* data = nullptr;
    size_t size = 0;
    QV_ASSERT_OK(qv_index_save_buffer(ivf.get(), &data, &size));
    Buffer buffer(data);
    QV_ASSERT_OK(qv_index_load_buffer(ctx_.get(), data, size, &raw));
    Index from_bytes(raw);
    QV_ASSERT_OK(Search(from_bytes.get(), q, dim, 10, &p, &from_buffer));
    EXPECT_TRUE(from_buffer == want) << descriptor;
    // Truncated: corrupt, never a crash.
    EXPECT_EQ(qv_index_load_buffer(ctx_.get(), data, size / 2, &raw), QV_ERR_CORRUPT_DATA);
    EXPECT_EQ(raw, nullptr);
  }
}

TEST_F(CapiIvf, FilterAndRangeSearch) {
  const int64_t dim = 20;
  const auto x = Clustered(n_, dim, 1), q = Clustered(nq_, dim, 2);
  Index ivf = Build("IVF16,Flat", dim, QV_METRIC_L2, x);
  std::vector<uint8_t> bits((n_ + 7) / 8, 0);
  for (int64_t id = 0; id < n_; id += 3) bits[id / 8] |= static_cast<uint8_t>(1u << (id % 8));
  qv_search_params_t p = Params(16);
  p.filter = bits.data();
  p.filter_bits = n_;
  Results r;
  QV_ASSERT_OK(Search(ivf.get(), q, dim, 10, &p, &r));
  EXPECT_TRUE(CheckKnn(QV_METRIC_L2, x, Iota(n_), dim, q, 10, r.distances, r.ids,
                       [](int64_t id) { return id % 3 == 0; }));
  const float radius = r.distances[9];
  qv_range_result_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_range_search(ivf.get(), nq_, q.data(), radius, &p, &raw));
  RangeResult range(raw);
  int64_t nq = 0;
  const int64_t* lims = nullptr;
  const int64_t* ids = nullptr;
  const float* distances = nullptr;
  QV_ASSERT_OK(qv_range_result_get(range.get(), &nq, &lims, &ids, &distances));
  EXPECT_EQ(nq, nq_);
  EXPECT_GE(lims[1], 10);  // query 0's ten filtered neighbours are all within its 10th distance
  for (int64_t i = 0; i < lims[nq]; ++i) {
    EXPECT_EQ(ids[i] % 3, 0);
    EXPECT_LE(distances[i], radius);
  }
}

// Training reports the k-means iterations (and the end of the PQ's training) between 0 and 1; a
// cancel part way leaves the index untrained, and a later train without the callback succeeds.
TEST_F(CapiIvf, TrainingReportsProgressAndACancelLeavesItUntrained) {
  const int64_t dim = 16;
  const auto x = Clustered(n_, dim, 3);
  for (const char* descriptor : {"IVF16,Flat", "IVF16,PQ4"}) {
    SCOPED_TRACE(descriptor);
    qv_index_t* raw = nullptr;
    QV_ASSERT_OK(qv_index_create(ctx_.get(), descriptor, dim, QV_METRIC_L2, &raw));
    Index index(raw);
    ProgressLog all;
    QV_ASSERT_OK(qv_index_set_progress(index.get(), RecordProgress, &all));
    QV_ASSERT_OK(qv_index_train(index.get(), n_, x.data()));
    ASSERT_GE(all.fractions.size(), 10u) << "one report an iteration";
    EXPECT_EQ(all.fractions.front(), 0.0);
    EXPECT_EQ(all.fractions.back(), 1.0);
    EXPECT_TRUE(std::is_sorted(all.fractions.begin(), all.fractions.end()));

    qv_index_t* other = nullptr;
    QV_ASSERT_OK(qv_index_create(ctx_.get(), descriptor, dim, QV_METRIC_L2, &other));
    Index fresh(other);
    ProgressLog stop;
    stop.stop_at = 0.3;
    QV_ASSERT_OK(qv_index_set_progress(fresh.get(), RecordProgress, &stop));
    EXPECT_EQ(qv_index_train(fresh.get(), n_, x.data()), QV_ERR_CANCELLED);
    qv_index_info_t info;
    qv_index_info_init(&info);
    QV_ASSERT_OK(qv_index_info(fresh.get(), &info));
    EXPECT_EQ(info.is_trained, 0);
    EXPECT_EQ(qv_index_add(fresh.get(), n_, x.data(), nullptr), QV_ERR_NOT_TRAINED);
    QV_ASSERT_OK(qv_index_set_progress(fresh.get(), nullptr, nullptr));
    QV_ASSERT_OK(qv_index_train(fresh.get(), n_, x.data()));
  }
}

}  // namespace
