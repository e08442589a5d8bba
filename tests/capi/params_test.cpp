// Parameter structs: the _init functions, NULL, and struct_size from older (smaller) or broken
// callers.
#include <vector>

#include "test_util.h"

namespace {

using namespace qvtest;

TEST(CapiParams, SearchParamsInitDefaults) {
  qv_search_params_t p;
  std::memset(&p, 0xCD, sizeof p);
  QV_ASSERT_OK(qv_search_params_init(&p));
  EXPECT_EQ(p.struct_size, sizeof(qv_search_params_t));
  EXPECT_EQ(p.filter, nullptr);
  EXPECT_EQ(p.filter_bits, 0);
  EXPECT_EQ(p.nprobe, QV_NPROBE_DEFAULT);
  EXPECT_EQ(p.search_width, 0u);
  EXPECT_EQ(p.compute_mode, QV_COMPUTE_FP32);
  EXPECT_EQ(p.refine_factor, 0u);
  EXPECT_EQ(p.max_range_results, 0);
  EXPECT_EQ(p.graph_visited, QV_GRAPH_VISITED_DEFAULT);
  EXPECT_EQ(p.graph_probes, 0u);
  EXPECT_EQ(p.graph_warps_per_query, 0u);
  EXPECT_EQ(p.graph_queries_per_warp, 0u);
}

TEST(CapiParams, ComputeModesAreCheckedAndExactOnTheCpu) {
  Context ctx = MakeCpuContext();
  const int64_t n = 200, dim = 12;
  const auto x = RandomVectors(n, dim, 31);
  Index idx = MakeIndex(ctx.get(), dim, QV_METRIC_L2);
  QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
  qv_search_params_t p;
  qv_search_params_init(&p);
  std::vector<float> d(3 * 5), d_mode(3 * 5);
  std::vector<int64_t> ids(3 * 5), ids_mode(3 * 5);
  QV_ASSERT_OK(qv_index_search(idx.get(), 3, x.data(), 5, &p, d.data(), ids.data()));
  for (qv_compute_mode_t mode : {QV_COMPUTE_TF32, QV_COMPUTE_FP16, QV_COMPUTE_BF16}) {
    p.compute_mode = mode;
    QV_ASSERT_OK(qv_index_search(idx.get(), 3, x.data(), 5, &p, d_mode.data(), ids_mode.data()));
    EXPECT_EQ(ids_mode, ids);
    EXPECT_EQ(d_mode, d);
  }
  p.compute_mode = 4;
  EXPECT_EQ(qv_index_search(idx.get(), 3, x.data(), 5, &p, d.data(), ids.data()), QV_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qv_last_error_message()).find("compute_mode"), std::string::npos);
}

TEST(CapiParams, KmeansParamsInitDefaults) {
  qv_kmeans_params_t p;
  std::memset(&p, 0xCD, sizeof p);
  QV_ASSERT_OK(qv_kmeans_params_init(&p));
  EXPECT_EQ(p.struct_size, sizeof(qv_kmeans_params_t));
  EXPECT_EQ(p.iterations, 20u);
  EXPECT_EQ(p.seed, 1234u);
  EXPECT_EQ(p.max_points_per_centroid, 256);
}

TEST(CapiParams, IndexInfoInitSetsStructSize) {
  qv_index_info_t info;
  std::memset(&info, 0xCD, sizeof info);
  QV_ASSERT_OK(qv_index_info_init(&info));
  EXPECT_EQ(info.struct_size, sizeof(qv_index_info_t));
}

TEST(CapiParams, InitNullIsInvalidArgument) {
  EXPECT_TRUE(FailsNaming(qv_search_params_init(nullptr), QV_ERR_INVALID_ARGUMENT, "params"));
  EXPECT_TRUE(FailsNaming(qv_kmeans_params_init(nullptr), QV_ERR_INVALID_ARGUMENT, "params"));
  EXPECT_TRUE(FailsNaming(qv_index_info_init(nullptr), QV_ERR_INVALID_ARGUMENT, "info"));
  EXPECT_TRUE(FailsNaming(qv_context_options_init(nullptr), QV_ERR_INVALID_ARGUMENT, "options"));
}

class CapiParamsIndex : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = MakeCpuContext(2);
    ASSERT_TRUE(ctx_) << qv_last_error_message();
    idx_ = MakeIndex(ctx_.get(), dim_, QV_METRIC_L2);
    ASSERT_TRUE(idx_) << qv_last_error_message();
    x_ = RandomVectors(n_, dim_, 11);
    QV_ASSERT_OK(qv_index_add(idx_.get(), n_, x_.data(), nullptr));
    q_ = RandomVectors(4, dim_, 12);
  }
  const int64_t dim_ = 6, n_ = 40;
  Context ctx_;
  Index idx_;
  std::vector<float> x_, q_;
};

TEST_F(CapiParamsIndex, NullParamsEqualsDefaultParams) {
  Results a, b;
  QV_ASSERT_OK(Search(idx_.get(), q_, dim_, 10, nullptr, &a));
  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  QV_ASSERT_OK(Search(idx_.get(), q_, dim_, 10, &p, &b));
  EXPECT_TRUE(a == b);
}

TEST_F(CapiParamsIndex, OlderSearchParamsStructIsAccepted) {
  // A caller whose struct ended after the filter: nprobe and search_width are beyond struct_size,
  // hold garbage, and must not be read. The filter it did set must be honoured.
  std::vector<uint8_t> bits((n_ + 7) / 8, 0);
  for (int64_t id = 0; id < n_; id += 3) bits[id / 8] |= uint8_t(1u << (id % 8));
  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  p.struct_size = static_cast<uint32_t>(offsetof(qv_search_params_t, nprobe));
  p.filter = bits.data();
  p.filter_bits = n_;
  p.nprobe = 0xFFFFFFFFu;
  p.search_width = 0xFFFFFFFFu;
  Results r;
  QV_ASSERT_OK(Search(idx_.get(), q_, dim_, 5, &p, &r));
  std::vector<int64_t> ids = Iota(n_);
  EXPECT_TRUE(CheckKnn(QV_METRIC_L2, x_, ids, dim_, q_, 5, r.distances, r.ids,
                       [](int64_t id) { return id % 3 == 0; }));

  // The same for range search.
  qv_range_result_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_range_search(idx_.get(), 4, q_.data(), 1e30f, &p, &raw));
  RangeResult rr(raw);
  const int64_t* lims = nullptr;
  const int64_t* rids = nullptr;
  QV_ASSERT_OK(qv_range_result_get(rr.get(), nullptr, &lims, &rids, nullptr));
  EXPECT_EQ(lims[4], 4 * ((n_ + 2) / 3));
  for (int64_t i = 0; i < lims[4]; ++i) EXPECT_EQ(rids[i] % 3, 0);
}

TEST_F(CapiParamsIndex, SearchParamsWithoutTheGraphFieldsAreAccepted) {
  // A caller built before the graph_ fields: its struct ends at max_range_results, and whatever
  // lies beyond it is not read.
  Results want;
  QV_ASSERT_OK(Search(idx_.get(), q_, dim_, 5, nullptr, &want));
  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  p.struct_size = static_cast<uint32_t>(offsetof(qv_search_params_t, max_range_results) + sizeof(int64_t));
  EXPECT_EQ(p.struct_size, offsetof(qv_search_params_t, graph_visited));
  p.graph_visited = -7;
  p.graph_probes = 1000;
  p.graph_warps_per_query = 1000;
  p.graph_queries_per_warp = 3;
  Results r;
  QV_ASSERT_OK(Search(idx_.get(), q_, dim_, 5, &p, &r));
  EXPECT_TRUE(r == want);
  qv_range_result_t* raw = nullptr;
  QV_ASSERT_OK(qv_index_range_search(idx_.get(), 4, q_.data(), 1.0f, &p, &raw));
  qv_range_result_free(raw);
}

// Bad graph_ values, each with the field it must name, and the value; refused whatever the index.
struct BadGraphWalk {
  const char* field;
  const char* value;
  qv_graph_visited_t visited;
  uint32_t probes, warps_per_query, queries_per_warp;
};
const BadGraphWalk kBadGraphWalks[] = {
    {"graph_visited", "-1", -1, 0, 0, 0},
    {"graph_visited", "4", 4, 0, 0, 0},
    {"graph_probes", "9", QV_GRAPH_VISITED_DEFAULT, QV_GRAPH_MAX_PROBES + 1, 0, 0},
    {"graph_probes", "4294967295", QV_GRAPH_VISITED_BLOOM, 0xFFFFFFFFu, 0, 0},
    {"graph_warps_per_query", "17", QV_GRAPH_VISITED_DEFAULT, 0, QV_GRAPH_MAX_WARPS_PER_QUERY + 1, 0},
    {"graph_queries_per_warp", "3", QV_GRAPH_VISITED_DEFAULT, 0, 0, 3},
    {"graph_queries_per_warp", "8", QV_GRAPH_VISITED_DEFAULT, 0, 0, 8},
    {"graph_warps_per_query", "2", QV_GRAPH_VISITED_DEFAULT, 0, 2, 2},
    {"graph_warps_per_query", "16", QV_GRAPH_VISITED_CUCKOO, 1, 16, 4},
};

qv_search_params_t WithGraphWalk(const BadGraphWalk& bad) {
  qv_search_params_t p;
  qv_search_params_init(&p);
  p.graph_visited = bad.visited;
  p.graph_probes = bad.probes;
  p.graph_warps_per_query = bad.warps_per_query;
  p.graph_queries_per_warp = bad.queries_per_warp;
  return p;
}

TEST(CapiParamsGraphWalk, BadValuesAreRefusedWhateverTheIndexAndChangeNothing) {
  Context ctx = MakeCpuContext(2);
  ASSERT_TRUE(ctx);
  const int64_t dim = 8, n = 300;
  const std::vector<float> x = RandomVectors(n, dim, 41), q = RandomVectors(5, dim, 42);
  for (const char* descriptor : {"Flat", "Graph16", "IVF4,Flat"}) {
    Index idx = MakeIndex(ctx.get(), dim, QV_METRIC_L2, descriptor);
    ASSERT_TRUE(idx) << descriptor << ": " << qv_last_error_message();
    QV_ASSERT_OK(qv_index_train(idx.get(), n, x.data()));
    QV_ASSERT_OK(qv_index_add(idx.get(), n, x.data(), nullptr));
    Results before;
    QV_ASSERT_OK(Search(idx.get(), q, dim, 5, nullptr, &before));
    for (const BadGraphWalk& bad : kBadGraphWalks) {
      const qv_search_params_t p = WithGraphWalk(bad);
      Results r;
      EXPECT_TRUE(FailsNaming(Search(idx.get(), q, dim, 5, &p, &r), QV_ERR_INVALID_ARGUMENT, bad.field))
          << descriptor << " " << bad.field << " " << bad.value;
      EXPECT_NE(std::string(qv_last_error_message()).find(bad.value), std::string::npos) << qv_last_error_message();
      qv_range_result_t* raw = nullptr;
      EXPECT_TRUE(FailsNaming(qv_index_range_search(idx.get(), 5, q.data(), 1.0f, &p, &raw),
                              QV_ERR_INVALID_ARGUMENT, bad.field))
          << descriptor << " " << bad.field << " " << bad.value;
      EXPECT_EQ(raw, nullptr);
    }
    // qv_knn reads the same struct.
    std::vector<float> d(5);
    std::vector<int64_t> ids(5);
    const qv_search_params_t p = WithGraphWalk(kBadGraphWalks[2]);
    EXPECT_TRUE(FailsNaming(qv_knn(ctx.get(), QV_METRIC_L2, dim, n, x.data(), 1, q.data(), 5, &p, d.data(), ids.data()),
                            QV_ERR_INVALID_ARGUMENT, "graph_probes"));
    EXPECT_EQ(Count(idx.get()), n) << descriptor;
    Results after;
    QV_ASSERT_OK(Search(idx.get(), q, dim, 5, nullptr, &after));
    EXPECT_TRUE(after == before) << descriptor;
  }
}

TEST_F(CapiParamsIndex, TooSmallSearchParamsStructIsRejected) {
  Results before;
  QV_ASSERT_OK(Search(idx_.get(), q_, dim_, 5, nullptr, &before));
  for (uint32_t size : {0u, 1u, 3u}) {
    qv_search_params_t p;
    QV_ASSERT_OK(qv_search_params_init(&p));
    p.struct_size = size;
    Results r;
    EXPECT_TRUE(FailsNamingAny(Search(idx_.get(), q_, dim_, 5, &p, &r), QV_ERR_INVALID_ARGUMENT,
                               {"params", "struct_size"}))
        << "struct_size " << size;
    qv_range_result_t* raw = nullptr;
    EXPECT_TRUE(FailsNamingAny(qv_index_range_search(idx_.get(), 4, q_.data(), 1.0f, &p, &raw),
                               QV_ERR_INVALID_ARGUMENT, {"params", "struct_size"}))
        << "struct_size " << size;
    EXPECT_EQ(raw, nullptr);
    qv_range_result_free(raw);
  }
  Results after;
  QV_ASSERT_OK(Search(idx_.get(), q_, dim_, 5, nullptr, &after));
  EXPECT_TRUE(before == after);
  EXPECT_EQ(Count(idx_.get()), n_);
}

TEST_F(CapiParamsIndex, StructSizeInsideAFieldIsRejected) {
  // No header ever ended a struct in the middle of a field: such a struct_size is garbage, and
  // honouring it would take half of the caller's value (here the low bytes of filter_bits).
  std::vector<uint8_t> bits((n_ + 7) / 8, 0xFF);
  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  p.filter = bits.data();
  p.filter_bits = n_;
  p.struct_size = static_cast<uint32_t>(offsetof(qv_search_params_t, filter_bits) + 4);
  Results r;
  EXPECT_TRUE(FailsNamingAny(Search(idx_.get(), q_, dim_, 5, &p, &r), QV_ERR_INVALID_ARGUMENT,
                             {"params", "struct_size"}));

  qv_kmeans_params_t kp;
  QV_ASSERT_OK(qv_kmeans_params_init(&kp));
  kp.struct_size = static_cast<uint32_t>(offsetof(qv_kmeans_params_t, seed) + 4);
  std::vector<float> c(2 * dim_);
  EXPECT_TRUE(
      FailsNamingAny(qv_kmeans(ctx_.get(), dim_, n_, x_.data(), 2, &kp, c.data(), nullptr, nullptr),
                     QV_ERR_INVALID_ARGUMENT, {"params", "struct_size"}));

  qv_context_options_t opts;
  QV_ASSERT_OK(qv_context_options_init(&opts));
  opts.device = QV_DEVICE_CPU;
  opts.struct_size = static_cast<uint32_t>(offsetof(qv_context_options_t, device) + 2);
  qv_context_t* ctx = nullptr;
  EXPECT_TRUE(FailsNamingAny(qv_context_create(&opts, &ctx), QV_ERR_INVALID_ARGUMENT,
                             {"options", "struct_size"}));
  qv_context_free(ctx);
}

TEST_F(CapiParamsIndex, OlderInfoStructIsWrittenOnlyUpToItsSize) {
  // An older caller's info ends before host_bytes: the library writes nothing past struct_size.
  struct Padded {
    qv_index_info_t info;
    unsigned char guard[32];
  } buf;
  std::memset(&buf, 0x5A, sizeof buf);
  const size_t old_size = offsetof(qv_index_info_t, host_bytes);
  buf.info.struct_size = static_cast<uint32_t>(old_size);
  QV_ASSERT_OK(qv_index_info(idx_.get(), &buf.info));
  EXPECT_EQ(buf.info.dim, dim_);
  EXPECT_EQ(buf.info.metric, QV_METRIC_L2);
  EXPECT_EQ(buf.info.count, n_);
  EXPECT_EQ(buf.info.is_trained, 1);
  EXPECT_EQ(buf.info.device, QV_DEVICE_CPU);
  EXPECT_EQ(buf.info.device_id, -1);
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&buf);
  for (size_t i = old_size; i < sizeof buf; ++i)
    ASSERT_EQ(bytes[i], 0x5A) << "byte " << i << " past struct_size " << old_size << " written";
}

TEST_F(CapiParamsIndex, TooSmallInfoStructIsRejected) {
  for (uint32_t size : {0u, 1u, 3u}) {
    qv_index_info_t info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = size;
    EXPECT_TRUE(FailsNamingAny(qv_index_info(idx_.get(), &info), QV_ERR_INVALID_ARGUMENT,
                               {"info", "struct_size"}))
        << "struct_size " << size;
  }
}

TEST(CapiParamsKmeans, OlderKmeansParamsStructIsAccepted) {
  // A caller whose struct ended before max_points_per_centroid gets that field's default (256), so
  // the result equals a full-size call with the default, and the garbage past the end is ignored.
  Context ctx = MakeCpuContext(2);
  ASSERT_TRUE(ctx);
  const int64_t dim = 4, n = 300;
  const uint32_t k = 3;
  std::vector<float> x = RandomVectors(n, dim, 21);

  qv_kmeans_params_t full;
  QV_ASSERT_OK(qv_kmeans_params_init(&full));
  full.iterations = 5;
  full.seed = 99;
  std::vector<float> c_full(k * dim);
  std::vector<int64_t> a_full(n);
  double obj_full = 0;
  QV_ASSERT_OK(
      qv_kmeans(ctx.get(), dim, n, x.data(), k, &full, c_full.data(), a_full.data(), &obj_full));

  qv_kmeans_params_t old = full;
  old.struct_size = static_cast<uint32_t>(offsetof(qv_kmeans_params_t, max_points_per_centroid));
  old.max_points_per_centroid = -77;  // garbage beyond struct_size
  std::vector<float> c_old(k * dim);
  std::vector<int64_t> a_old(n);
  double obj_old = 0;
  QV_ASSERT_OK(
      qv_kmeans(ctx.get(), dim, n, x.data(), k, &old, c_old.data(), a_old.data(), &obj_old));
  EXPECT_EQ(c_full, c_old);
  EXPECT_EQ(a_full, a_old);
  EXPECT_EQ(obj_full, obj_old);
}

TEST(CapiParamsKmeans, TooSmallKmeansParamsStructIsRejected) {
  Context ctx = MakeCpuContext(2);
  ASSERT_TRUE(ctx);
  const int64_t dim = 4, n = 20;
  std::vector<float> x = RandomVectors(n, dim, 22);
  std::vector<float> c(2 * dim);
  for (uint32_t size : {0u, 1u, 3u}) {
    qv_kmeans_params_t p;
    QV_ASSERT_OK(qv_kmeans_params_init(&p));
    p.struct_size = size;
    EXPECT_TRUE(
        FailsNamingAny(qv_kmeans(ctx.get(), dim, n, x.data(), 2, &p, c.data(), nullptr, nullptr),
                       QV_ERR_INVALID_ARGUMENT, {"params", "struct_size"}))
        << "struct_size " << size;
  }
}

TEST(CapiParamsKnn, TooSmallSearchParamsStructIsRejected) {
  Context ctx = MakeCpuContext(2);
  ASSERT_TRUE(ctx);
  const int64_t dim = 4, n = 20;
  std::vector<float> x = RandomVectors(n, dim, 23);
  std::vector<float> d(3);
  std::vector<int64_t> ids(3);
  qv_search_params_t p;
  QV_ASSERT_OK(qv_search_params_init(&p));
  p.struct_size = 0;
  EXPECT_TRUE(FailsNamingAny(
      qv_knn(ctx.get(), QV_METRIC_L2, dim, n, x.data(), 1, x.data(), 3, &p, d.data(), ids.data()),
      QV_ERR_INVALID_ARGUMENT, {"params", "struct_size"}));
}

}  // namespace
